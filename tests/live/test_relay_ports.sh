#!/bin/sh
# `ncclguard relay` says which port each command takes, and `watch` given
# the wrong one of a relay's three ports says which is right:
#   - `relay --help` and the relay at its start print the `run --relay`
#     line with the control port P and the `watch` line with the live
#     port P+2, for the host and --port given;
#   - without --bind it listens on 127.0.0.1 only (lttng-relayd lets
#     whoever reaches it read and add sessions), and says who can reach
#     it; --bind 0.0.0.0 warns that every interface is open;
#   - the printed `watch` line works (it lists the relay's sessions);
#   - watch given the control port P, or the data port P+1, exits 1 and
#     names the live port P+2;
#   - where the live port is not beside the one given (a relayd started
#     with ports of its own choosing) or nothing listens, it names none:
#     a wrong guess would mislead.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
for c in lttng-relayd python3; do
	command -v "$c" >/dev/null || { echo "SKIP: $c not installed"; exit 0; }
done
export LTTNG_HOME="$NG_TMP"

PIDS=""
stop_all() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$p" 2>/dev/null
	done
	PIDS=""
}
trap 'stop_all; rm -rf "$NG_TMP"' EXIT

# free_ports N CONTIGUOUS: N ports of 127.0.0.1 nobody listens on now,
# consecutive when CONTIGUOUS is 1.
free_ports() {
	python3 - "$1" "$2" <<'PY'
import random, socket, sys
n, contiguous = int(sys.argv[1]), sys.argv[2] == "1"
for _ in range(200):
    socks = []
    try:
        if contiguous:
            base = random.randrange(10000, 30000)
            for p in range(base, base + n):
                s = socket.socket(); socks.append(s); s.bind(("127.0.0.1", p))
        else:
            for _ in range(n):
                s = socket.socket(); socks.append(s); s.bind(("127.0.0.1", 0))
        print(" ".join(str(s.getsockname()[1]) for s in socks))
        sys.exit(0)
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
sys.exit(1)
PY
}

listening() {
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null
}

# watch_lists URL: watch on URL lists the relay's sessions (a progress
# report comes), then is stopped.  The output is emptied first: the shell
# truncates it in the child, maybe only after the loop below has read an
# earlier watch's report there, and signalled this one before it could
# take SIGINT.
watch_lists() {
	: >"$NG_TMP/wl.out"
	"$NG_BIN" watch "$1" --every 0.2 >"$NG_TMP/wl.out" 2>"$NG_TMP/wl.err" &
	w=$!
	i=0
	until grep -q "0 of 0 sessions open" "$NG_TMP/wl.out"; do
		if ! kill -0 $w 2>/dev/null || [ $i -ge 300 ]; then
			kill $w 2>/dev/null
			cat "$NG_TMP/wl.out" "$NG_TMP/wl.err"
			fail "watch $1 did not list the relay's sessions"
		fi
		sleep 0.1; i=$((i + 1))
	done
	kill -INT $w
	rc=0; wait $w || rc=$?
	assert_eq "$rc" 0 "watch $1 stopped by SIGINT"
}

# wrong URL: watch on URL fails (exit 1) without waiting for a job.
wrong() {
	rc=0
	timeout 60 "$NG_BIN" watch "$1" >"$NG_TMP/w.out" 2>"$NG_TMP/w.err" || rc=$?
	assert_eq "$rc" 1 "watch $1: exit status"
	assert_grep "cannot list the relayd's sessions" "$NG_TMP/w.err"
}

note "relay --help: the lines to use, with P and P+2"
"$NG_BIN" relay --port 6100 --bind 10.1.2.3 --help >"$NG_TMP/help" 2>"$NG_TMP/help.err" ||
	fail "relay --help: exit status"
assert_grep "^  record: ncclguard run --relay net://10.1.2.3:6100 -o RUNDIR -- CMD" "$NG_TMP/help"
assert_grep "^  follow: ncclguard watch net://10.1.2.3:6102 " "$NG_TMP/help"
"$NG_BIN" relay --help >"$NG_TMP/help" || fail "relay --help: exit status"
assert_grep "run --relay net://127.0.0.1:5342 " "$NG_TMP/help"
assert_grep "watch net://127.0.0.1:5344 " "$NG_TMP/help"
assert_no_grep "watch net://[^ ]*:5342" "$NG_TMP/help"
assert_grep "authenticates no one" "$NG_TMP/help"
assert_grep "ssh -N -L P:127.0.0.1:P" "$NG_TMP/help"
"$NG_BIN" relay --bind 0.0.0.0 --help >"$NG_TMP/help" || fail "relay --help: exit status"
assert_grep "run --relay net://$(hostname):5342 " "$NG_TMP/help"
rc=0; "$NG_BIN" relay --bind 10.0.0.1:5 -o "$NG_TMP/x" 2>"$NG_TMP/help.err" || rc=$?
assert_eq "$rc" 2 "relay --bind ADDR:PORT: a usage error"

note "the relay prints them at its start; its watch line works"
tries=0
while :; do
	tries=$((tries + 1))
	ports=$(free_ports 3 1) || fail "no three consecutive free ports"
	set -- $ports
	P=$1
	"$NG_BIN" relay -o "$NG_TMP/r" --port "$P" \
		>"$NG_TMP/relay.out" 2>"$NG_TMP/relay.err" &
	RELAY=$!
	PIDS="$PIDS $RELAY"
	i=0
	while kill -0 $RELAY 2>/dev/null && ! listening $((P + 2)) && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	listening $((P + 2)) && break
	# another process took one of the ports meanwhile: others
	cat "$NG_TMP/relay.err"
	stop_all
	[ $tries -lt 5 ] || fail "ncclguard relay did not listen on $P-$((P + 2))"
done
assert_grep "^  record: ncclguard run --relay net://127.0.0.1:$P -o RUNDIR -- CMD" "$NG_TMP/relay.err"
# Loopback only: every one of its ports, bound to 127.0.0.1 and nothing else.
for port in $P $((P + 1)) $((P + 2)); do
	assert_eq "$(ss -Hltn "sport = :$port" | awk '{print $4}')" "127.0.0.1:$port" \
		"relay without --bind: port $port on loopback only"
done
assert_grep "^  access: 127.0.0.1 only: every local user of this host can read every session" "$NG_TMP/relay.err"
assert_grep "ssh -N -L $P:127.0.0.1:$P -L $((P + 1)):127.0.0.1:$((P + 1)) " "$NG_TMP/relay.err"
assert_no_grep "warning" "$NG_TMP/relay.err"
assert_grep "^  follow: ncclguard watch net://127.0.0.1:$((P + 2)) " "$NG_TMP/relay.err"
url=$(sed -n 's/^  follow: ncclguard watch \([^ ]*\) .*/\1/p' "$NG_TMP/relay.err")
watch_lists "$url"

note "watch given the control port or the data port names the live port"
wrong "net://127.0.0.1:$P"
assert_grep "^ncclguard watch: net://127.0.0.1:$P looks like a relay's control port; watch needs its live port, net://127.0.0.1:$((P + 2))$" "$NG_TMP/w.err"
wrong "net://127.0.0.1:$((P + 1))"
assert_grep "^ncclguard watch: net://127.0.0.1:$((P + 1)) looks like a relay's data port; watch needs its live port, net://127.0.0.1:$((P + 2))$" "$NG_TMP/w.err"

note "nothing named where nothing is known"
wrong "net://127.0.0.1:$((P + 3))"
assert_no_grep "looks like" "$NG_TMP/w.err"
# The relay still serves its viewers after being asked.
watch_lists "$url"
stop_all

note "relay --bind 0.0.0.0 warns that every interface is open"
ports=$(free_ports 3 1) || fail "no three consecutive free ports"
set -- $ports
"$NG_BIN" relay -o "$NG_TMP/r3" --port "$1" --bind 0.0.0.0 \
	>"$NG_TMP/relay3.out" 2>"$NG_TMP/relay3.err" &
RELAY=$!
PIDS="$PIDS $RELAY"
# A file of its own: the first relay's relay.err has a stop line too,
# and the shell in the background may not have emptied it yet.
i=0
until grep -q "^  stop:" "$NG_TMP/relay3.err" || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
assert_grep "^ncclguard relay: warning: --bind 0.0.0.0 listens on every interface: anyone who reaches this host on ports $1-$(($1 + 2)) can read every session and add sessions" "$NG_TMP/relay3.err"
assert_grep "^  access: every interface: every host that reaches it" "$NG_TMP/relay3.err"
stop_all
# A relayd whose live port is not beside its control or data port.
while :; do
	ports=$(free_ports 3 0) || fail "no free ports"
	set -- $ports
	[ $(($3 - $1)) != 1 ] && [ $(($3 - $1)) != 2 ] &&
		[ $(($3 - $2)) != 1 ] && [ $(($3 - $2)) != 2 ] && break
done
lttng-relayd -o "$NG_TMP/r2" -C "tcp://127.0.0.1:$1" -D "tcp://127.0.0.1:$2" \
	-L "tcp://127.0.0.1:$3" >"$NG_TMP/relayd.log" 2>&1 &
PIDS="$PIDS $!"
i=0
until listening "$3"; do
	[ $i -lt 100 ] || { cat "$NG_TMP/relayd.log"; fail "lttng-relayd not listening"; }
	sleep 0.1; i=$((i + 1))
done
wrong "net://127.0.0.1:$1"
assert_no_grep "looks like" "$NG_TMP/w.err"
wrong "net://127.0.0.1:$2"
assert_no_grep "looks like" "$NG_TMP/w.err"
watch_lists "net://127.0.0.1:$3"
echo ok
