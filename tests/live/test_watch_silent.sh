#!/bin/sh
# watch always answers, whatever the relay does:
#   - a "relay" that accepts connections and never answers: watch says
#     "relay not answering for 10 s" and keeps trying; SIGINT and
#     SIGTERM each end it promptly, status 0 (a signal, no hang), with
#     its last line;
#   - a real lttng-relayd stopped with SIGSTOP while watch follows it:
#     the same.
# The bounds are generous (5 s to end on a signal, where watch promises
# 1 s; 60 s for the 10 s line): a loaded machine must not fail them.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 0; }

PIDS=""
cleanup() {
	for p in $PIDS; do
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$NG_TMP"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# watch_bg NAME URL: watch in the background; its pid in $W.
watch_bg() {
	: >"$NG_TMP/$1.out"
	"$NG_BIN" watch "$2" --every 1 >"$NG_TMP/$1.out" 2>"$NG_TMP/$1.err" &
	W=$!
	PIDS="$PIDS $W"
}

# wait_for PATTERN FILE PID SECS: PATTERN in FILE within SECS while PID runs.
wait_for() {
	i=0
	until grep -q "$1" "$2"; do
		kill -0 "$3" 2>/dev/null || { cat "$2"; fail "watch ended before '$1'"; }
		[ $i -lt $(($4 * 10)) ] || { cat "$2"; fail "'$1' not within $4 s"; }
		sleep 0.1; i=$((i + 1))
	done
}

# stops NAME PID SIG: SIG ends watch PID within 5 s, status 0, last line.
stops() {
	t0=$(date +%s%N)
	kill -"$3" "$2"
	i=0
	while kill -0 "$2" 2>/dev/null; do
		[ $i -lt 50 ] || { cat "$NG_TMP/$1.out" "$NG_TMP/$1.err"; fail "$1: still running 5 s after SIG$3"; }
		sleep 0.1; i=$((i + 1))
	done
	rc=0; wait "$2" || rc=$?
	echo "$1: ended $(( ($(date +%s%N) - t0) / 1000000 )) ms after SIG$3"
	assert_eq "$rc" 0 "$1: status after SIG$3"
	assert_grep "^ncclguard watch: stopped; 0 hangs reported$" "$NG_TMP/$1.out"
}

note "a relay that accepts and never answers"
P=$(free_port)
python3 - "$P" >"$NG_TMP/mute.log" 2>&1 <<'EOF' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
held = []
print("listening", flush=True)
while True:
    c, _ = s.accept()
    held.append(c)		# read nothing, answer nothing, close nothing
EOF
MUTE=$!
PIDS="$PIDS $MUTE"
i=0
until grep -q listening "$NG_TMP/mute.log"; do
	[ $i -lt 100 ] || fail "the mute relay did not start"
	sleep 0.1; i=$((i + 1))
done
watch_bg mint "net://127.0.0.1:$P"
WI=$W
watch_bg mterm "net://127.0.0.1:$P"
WT=$W
wait_for "relay not answering for 10 s" "$NG_TMP/mint.out" $WI 60
wait_for "relay not answering for 10 s" "$NG_TMP/mterm.out" $WT 60
stops mint $WI INT
stops mterm $WT TERM
kill "$MUTE"

note "a real lttng-relayd, stopped with SIGSTOP"
command -v lttng-relayd >/dev/null || { echo "SKIP: lttng-relayd not installed"; exit 0; }
export LTTNG_HOME="$NG_TMP"
for try in 1 2 3 4 5; do
	C=$(free_port) D=$(free_port) L=$(free_port)
	lttng-relayd -o "$NG_TMP/relay" -C "tcp://127.0.0.1:$C" -D "tcp://127.0.0.1:$D" \
		-L "tcp://127.0.0.1:$L" >"$NG_TMP/relayd.log" 2>&1 &
	RELAYD=$!
	PIDS="$PIDS $RELAYD"
	i=0
	until python3 -c "import socket; socket.create_connection(('127.0.0.1', $L), 1)" 2>/dev/null; do
		kill -0 $RELAYD 2>/dev/null || break
		sleep 0.1; i=$((i + 1))
		[ $i -lt 100 ] || break
	done
	kill -0 $RELAYD 2>/dev/null && break
	[ $try -lt 5 ] || { cat "$NG_TMP/relayd.log"; fail "lttng-relayd did not start"; }
done
watch_bg sint "net://127.0.0.1:$L"
WI=$W
watch_bg sterm "net://127.0.0.1:$L"
WT=$W
# both have listed its (no) sessions: the relay answers
wait_for "0 of 0 sessions open" "$NG_TMP/sint.out" $WI 30
wait_for "0 of 0 sessions open" "$NG_TMP/sterm.out" $WT 30
kill -STOP $RELAYD
wait_for "relay not answering for 10 s" "$NG_TMP/sint.out" $WI 60
wait_for "relay not answering for 10 s" "$NG_TMP/sterm.out" $WT 60
stops sint $WI INT
stops sterm $WT TERM
kill -CONT $RELAYD
assert_no_grep "cannot list" "$NG_TMP/sint.err"
echo ok
