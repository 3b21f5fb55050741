#!/bin/sh
# `make demo-cluster` (tools/demo_cluster.sh) shows what it says:
#   - watch names rank 4 (host-c) missing from all-reduce seq 70 while the
#     job runs: every rank alive when the line came, and the line before
#     any rank's watchdog fired (the watchdogs are what end the job);
#   - the job ends by its watchdogs (each host's run exits 4), watch with 5;
#   - analyze of the relay's folder names rank 4 stuck in the host call;
#   - nothing of it is left running: no process in the hosts' network
#     namespaces (session daemons, relayd, keepers), none naming its
#     folder; also when it is interrupted (^C) while the job runs;
#   - without root it says so and fails.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
DEMO="$NG_ROOT/tools/demo_cluster.sh"

if command -v setpriv >/dev/null; then
	note "not root: a clear error"
	# The user may not be able to read the clone (a 0700 home or mktemp
	# folder): the script comes on its standard input, opened by us, and
	# the user starts in /.  The build folder is still the clone's: the
	# demo must say it needs root before it looks there.
	rc=0
	(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups sh -s "$NG_BUILD" \
		<"$DEMO" >"$NG_TMP/user.out" 2>&1) || rc=$?
	cat "$NG_TMP/user.out"
	assert_eq "$rc" 1 "the demo's status without root"
	assert_grep "demo-cluster: needs root" "$NG_TMP/user.out"
fi

[ "$(id -u)" = 0 ] && unshare -n -u -m true 2>/dev/null ||
	{ echo "SKIP: the demo's hosts are namespaces: needs root with CAP_SYS_ADMIN"; exit 0; }
for c in nsenter ip lttng lttng-sessiond lttng-relayd babeltrace2 bash; do
	command -v "$c" >/dev/null || { echo "SKIP: $c not installed"; exit 0; }
done

# left_behind DIR: processes of the demo still there: in the network
# namespaces its state names, or with DIR in their command line.
left_behind() {
	for p in /proc/[0-9]*; do
		n=$(readlink "$p/ns/net" 2>/dev/null) || continue
		if grep -qxF "netns=$n" "$1/state" ||
		   tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF "$1"; then
			echo "${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
		fi
	done
}

note "the demo"
W="$NG_TMP/full"
rc=0
NG_DEMO_DIR="$W" sh "$DEMO" "$NG_BUILD" >"$NG_TMP/demo.out" 2>&1 || rc=$?
cat "$NG_TMP/demo.out"
assert_eq "$rc" 0 "the demo's status"
assert_eq "$(grep -c '^netns=' "$W/state")" 3 "hosts noted"
left=$(left_behind "$W")
[ -z "$left" ] || fail "left running after the demo: $left"

# (then what the hosts' samplers saw near it, if they had started)
hang='HANG comm [0-9a-f]* allreduce seq 70, waiting [0-9]* s: ranks 0-3,5 (host-a: 0-1, host-b: 2-3, host-c: 5) wait; missing: rank 4 (host-c)\(; no hardware change near it on [a-z, -]*\)\{0,1\}$'
assert_grep "$hang" "$W/watch.txt"
assert_grep "^== 5.*6 of its 6 ranks alive" "$NG_TMP/demo.out"
assert_grep "^      $hang" "$NG_TMP/demo.out"
assert_grep '^alive_at_hang=6$' "$W/state"
# In watch's own order: the hang before any watchdog's timeout.
first_hang=$(grep -n '^  HANG' "$W/watch.txt" | head -n 1 | cut -d: -f1)
first_tout=$(grep -n '^  timeout: rank' "$W/watch.txt" | head -n 1 | cut -d: -f1)
[ -n "$first_tout" ] || fail "watch saw no watchdog fire"
[ "$first_hang" -lt "$first_tout" ] ||
	{ cat "$W/watch.txt"; fail "the hang was named after a watchdog had fired"; }
for h in host-a host-b host-c; do
	assert_grep "^run_rc.$h=4$" "$W/state"
done
assert_grep '^watch_rc=5$' "$W/state"
assert_grep "the job's sessions ended; 1 hang reported" "$W/watch.txt"

assert_grep '^analyze_rc=5$' "$W/state"
assert_grep '^   |   !! hang: allreduce seq 70 .* rank 4 stuck inside the host call' "$NG_TMP/demo.out"
python3 - "$W/report.json" <<'EOF' || fail "report.json"
import json, sys
r = json.load(open(sys.argv[1]))
hosts = sorted({(x["rank"], x["host"]) for x in r["ranks"]})
assert hosts == [(0, "host-a"), (1, "host-a"), (2, "host-b"), (3, "host-b"),
                 (4, "host-c"), (5, "host-c")], hosts
assert len(r["hangs"]) == 1, r["hangs"]
h = r["hangs"][0]
assert h["op"] == "allreduce" and h["seq"] == 70, h
assert h["rank_state"]["4"] == "in_host_call", h
assert all(h["rank_state"][str(k)] == "waiting" for k in (0, 1, 2, 3, 5)), h
assert h["last_seq_by_rank"]["4"] == 69, h
assert r["lost_events"] == 0, r["lost_events"]
EOF

note "interrupted while the job runs: everything stopped"
W2="$NG_TMP/int"
# In a session of its own, as under a terminal: ^C goes to its group.
# SIGINT as a terminal leaves it: a shell starts its background jobs
# with it ignored, and a shell cannot trap what it was started ignoring.
NG_DEMO_DIR="$W2" setsid python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp("sh", ["sh"] + sys.argv[1:])' "$DEMO" "$NG_BUILD" >"$NG_TMP/demo2.out" 2>&1 &
pid=$!
i=0
until [ -e "$W2/go" ]; do
	kill -0 "$pid" 2>/dev/null || { cat "$NG_TMP/demo2.out"; fail "the demo ended before its job began"; }
	[ $i -lt 300 ] || { kill -KILL -"$pid"; fail "the demo's job did not begin in 30 s"; }
	sleep 0.1; i=$((i + 1))
done
sleep 1
kill -INT -"$pid"
rc=0
wait "$pid" || rc=$?
cat "$NG_TMP/demo2.out"
assert_eq "$rc" 130 "the demo's status after ^C"
assert_grep "demo-cluster: failed (status 130)" "$NG_TMP/demo2.out"
left=$(left_behind "$W2")
[ -z "$left" ] || fail "left running after ^C: $left"
echo PASS
