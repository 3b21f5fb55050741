#!/bin/sh
# Two hosts, as Linux namespaces: each its own network (a veth pair
# between them, 10.251.0.1 and .2), hostname and /var/run/lttng, so each
# has a session daemon of its own.  mpirun on host-a starts 2 tasks on
# each host (its remote shell enters the other namespace), each wrapped by
# ncclguard run; the ranks exchange the unique id over TCP.
#   - into one shared DIR: DIR/host-a and DIR/host-b, one trace each;
#   - streamed to `ncclguard relay` on host-a (live sessions), the run
#     records into the relay's output folder: analyze reads it and finds
#     the same ranks and collectives as in the local recording.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
. "$NG_ROOT/tests/e2e/cluster.sh"

[ "$NG_LTTNG_ISOLATED" = root ] || ng_skip "hosts as namespaces need root with CAP_SYS_ADMIN"
command -v mpirun >/dev/null || ng_skip "mpirun not installed (apt-get install openmpi-bin)"
command -v nsenter >/dev/null || ng_skip "nsenter not installed (util-linux)"
command -v ip >/dev/null || ng_skip "ip not installed (apt-get install iproute2)"
command -v lttng-relayd >/dev/null || ng_skip "lttng-relayd not installed (lttng-tools)"

HOSTS="host-a host-b"
printf '127.0.0.1 localhost\n10.251.0.1 host-a\n10.251.0.2 host-b\n' >"$NG_TMP/hosts"

# A host: a process that holds its namespaces, with a private
# /var/run/lttng and /etc/hosts; /dev/shm stays shared (the CPU backend's
# ranks meet there, as a GPU job's meet over the network).
for h in $HOSTS; do
	mkdir -p "$NG_TMP/$h.home"
	unshare -n -u -m --fork sh -c "
		hostname $h && mount --bind '$NG_TMP/hosts' /etc/hosts &&
		mount -t tmpfs -o mode=0755 ng-lttng /var/run/lttng && ip link set lo up || exit 1
		echo \$\$ >'$NG_TMP/$h.pid'
		exec sleep 100000" 2>"$NG_TMP/$h.unshare" &
done
for h in $HOSTS; do
	i=0
	while [ ! -s "$NG_TMP/$h.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$NG_TMP/$h.pid" ] || ng_skip "cannot make host $h: $(cat "$NG_TMP/$h.unshare")"
done
PA=$(cat "$NG_TMP/host-a.pid")
PB=$(cat "$NG_TMP/host-b.pid")

# in_host HOST CMD...: CMD on that host.
in_host() {
	_h=$1; shift
	nsenter -t "$(cat "$NG_TMP/$_h.pid")" -n -u -m -- env LTTNG_HOME="$NG_TMP/$_h.home" "$@"
}

# Each host's session daemon (started by the first run there) and relay,
# then the hosts themselves.
ng_hosts_down() {
	for h in $HOSTS; do
		[ -s "$NG_TMP/$h.pid" ] || continue
		for pf in /var/run/lttng/lttng-sessiond.pid; do
			p=$(in_host "$h" cat "$pf" 2>/dev/null) || continue
			kill "$p" 2>/dev/null
			i=0
			while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
			kill -9 "$p" 2>/dev/null
		done
		kill "$(cat "$NG_TMP/$h.pid")" 2>/dev/null
	done
	[ -n "${RELAY:-}" ] && kill "$RELAY" 2>/dev/null
	return 0
}
NG_AT_EXIT="ng_hosts_down; $NG_AT_EXIT"

ip link add nga netns "$PA" type veth peer name ngb netns "$PB" 2>"$NG_TMP/veth.err" ||
	ng_skip "no veth pair between namespaces: $(cat "$NG_TMP/veth.err")"
nsenter -t "$PA" -n sh -c 'ip addr add 10.251.0.1/24 dev nga && ip link set nga up' ||
	fail "host-a's address"
nsenter -t "$PB" -n sh -c 'ip addr add 10.251.0.2/24 dev ngb && ip link set ngb up' ||
	fail "host-b's address"
assert_eq "$(in_host host-b hostname)" host-b "host-b's name"

# mpirun's remote shell: "agent HOST CMD" runs CMD on that host.
cat >"$NG_TMP/agent.sh" <<EOF
#!/bin/sh
h=\$1; shift
exec nsenter -t "\$(cat "$NG_TMP/\$h.pid")" -n -u -m -- \\
	env LTTNG_HOME="$NG_TMP/\$h.home" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \\
	sh -c "\$*"
EOF
chmod +x "$NG_TMP/agent.sh"

# job NAME RUN-ARGS...: on host-a, mpirun starts ranks 0-1 there and 2-3
# on host-b, each `ncclguard run RUN-ARGS -- example`; $NAME.rc etc.  Each
# task is held, once its rank is done, until $NAME.release exists
# (ng_release_when).
port=29650
job() {
	_n=$1; shift
	port=$((port + 1))
	rc=0
	in_host host-a env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		OMPI_MCA_btl=self OMPI_MCA_btl_base_warn_component_unused=0 \
		timeout 240 mpirun --oversubscribe --host host-a:2,host-b:2 -np 4 \
		--mca plm_rsh_agent "$NG_TMP/agent.sh" -x LD_LIBRARY_PATH \
		"$NG_BIN" run "$@" -- sh "$NG_TMP/hold.sh" "$NG_TMP/$_n.release" \
		"$NG_EXAMPLE" --id-tcp 10.251.0.1:$port $NG_EX_ARGS \
		>"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" || rc=$?
	[ $rc = 0 ] || { cat "$NG_TMP/$_n.err"; fail "job $_n: exit $rc"; }
	assert_eq "$(grep -c 'check OK' "$NG_TMP/$_n.out")" 4 "ranks of job $_n that checked OK"
	ng_wait_gone "id-tcp 10.251.0.1:$port " 30
}

# watch_hosts FILE: each host's sessions, in FILE.host-a and FILE.host-b.
watch_hosts() {
	watchers=""
	for h in $HOSTS; do
		ng_sessions_watch "$1.$h" in_host "$h"
		watchers="$watchers $!"
	done
}

# release_when_seen FILE NAME: job NAME's tasks go once its ranks are done
# and FILE.host-a and FILE.host-b (watch_hosts) each show a session.
release_when_seen() {
	ng_release_when "$NG_TMP/$2.release" \
		"ng_all_ok '$NG_TMP/$2.out' && ng_seen '$1.host-a' 1 && ng_seen '$1.host-b' 1"
}

# check_hosts FILE JOB: one session of JOB on each host, none left.
check_hosts() {
	for w in $watchers; do ng_stop_pid "$w"; done
	for h in $HOSTS; do
		assert_eq "$(ng_sessions_of "$1.$h" "$2")" 1 "sessions of job $2 on $h"
		assert_eq "$(in_host "$h" lttng list 2>/dev/null | grep -c 'ncclguard-')" 0 \
			"sessions left on $h"
	done
}

note "one shared DIR: DIR/host-a and DIR/host-b"
watch_hosts "$NG_TMP/sess.l"
release_when_seen "$NG_TMP/sess.l" l
job l -o "$NG_TMP/l"
jl=$(ng_job_of "$NG_TMP/l")
check_hosts "$NG_TMP/sess.l" "$jl"
ng_no_job_folders
assert_eq "$(cd "$NG_TMP/l" && ls -d host-*)" "$(printf 'host-a\nhost-b')" "host folders"
for h in $HOSTS; do
	assert_eq "$(find "$NG_TMP/l/$h" -name metadata | wc -l)" 1 "traces of $h"
	assert_eq "$(sed -n 's/^  "tasks": \(.*\),$/\1/p' "$NG_TMP/l/$h/run.json")" 2 "tasks on $h"
done
"$NG_BIN" analyze "$NG_TMP/l" --json "$NG_TMP/l.json" >"$NG_TMP/l.an" 2>&1 ||
	{ cat "$NG_TMP/l.an"; fail "analyze the shared DIR"; }
ng_check_report "$NG_TMP/l.json" 4 2

note "streamed to ncclguard relay on host-a, live"
in_host host-a "$NG_BIN" relay -o "$NG_TMP/r" --port 7342 --bind 10.251.0.1 \
	>"$NG_TMP/relay.out" 2>"$NG_TMP/relay.err" &
# Its pid is the daemon's (it execs lttng-relayd), and it says it.
i=0
until RELAY=$(sed -n 's/.*lttng-relayd (pid \([0-9]*\)).*/\1/p' "$NG_TMP/relay.err") &&
      [ -n "$RELAY" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || { cat "$NG_TMP/relay.err"; fail "ncclguard relay did not start"; }
	sleep 0.1
done
# Ready once its control port answers, from the other host.
i=0
until in_host host-b python3 -c 'import socket; socket.create_connection(("10.251.0.1", 7342), 1)' \
	2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] || { cat "$NG_TMP/relay.err"; fail "the relay does not listen"; }
	sleep 0.1
done
# the address it listens on, which the other hosts reach
assert_grep "run --relay net://10.251.0.1:7342 " "$NG_TMP/relay.err"
assert_grep "watch net://10.251.0.1:7344 " "$NG_TMP/relay.err"
watch_hosts "$NG_TMP/sess.r"
release_when_seen "$NG_TMP/sess.r" r
# The sessions are live (what `ncclguard watch` attaches to).
( i=0
  while [ $i -lt 600 ]; do
	in_host host-b lttng --mi xml list >"$NG_TMP/live" 2>&1 &&
		grep -q '<name>ncclguard-' "$NG_TMP/live" && break
	sleep 0.1; i=$((i + 1))
  done ) &
live=$!
job r --relay net://10.251.0.1:7342 -o "$NG_TMP/r"
wait $live
jr=$(ng_job_of "$NG_TMP/r")
check_hosts "$NG_TMP/sess.r" "$jr"
ng_no_job_folders
assert_grep "<live_timer_interval>1000000</live_timer_interval>" "$NG_TMP/live"
kill "$RELAY"
wait "$RELAY" 2>/dev/null
RELAY=""
# The relay's layout: <output>/<host>/<session>-<date>-<time>/ust/...
for h in $HOSTS; do
	assert_eq "$(find "$NG_TMP/r/$h" -name metadata | wc -l)" 1 "traces of $h at the relay"
	n=$(find "$NG_TMP/r/$h" -maxdepth 1 -type d -name "ncclguard-*-$jr-*" | wc -l)
	assert_eq "$n" 1 "session folders of job $jr from $h at the relay"
	assert_eq "$(ng_run_field "$NG_TMP/r" relay | sort -u)" '"net://10.251.0.1:7342:7343"' "run.json relay"
done
"$NG_BIN" analyze "$NG_TMP/r" --json "$NG_TMP/r.json" >"$NG_TMP/r.an" 2>&1 ||
	{ cat "$NG_TMP/r.an"; fail "analyze the relay's output"; }
ng_check_report "$NG_TMP/r.json" 4 2
ng_summary "$NG_TMP/l.json" >"$NG_TMP/l.sum"
ng_summary "$NG_TMP/r.json" >"$NG_TMP/r.sum"
cmp -s "$NG_TMP/l.sum" "$NG_TMP/r.sum" ||
	{ diff "$NG_TMP/l.sum" "$NG_TMP/r.sum"; fail "the relayed job differs from the local one"; }

echo "ok"
