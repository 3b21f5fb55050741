#!/bin/sh
# `ncclguard watch` on a live job across two hosts (namespaces, each with
# its session daemon streaming a live session to one lttng-relayd): 4
# ranks on the CPU backend, ranks 0-1 on hosta, 2-3 on hostb; rank 3 skips
# the last allreduce, so ranks 0-2 wait in it for ever.  While the job
# still runs, watch reports each rank's progress on both hosts, then,
# past --stuck, the hang: ranks 0-2 waiting (with their hosts), rank 3
# missing on hostb; text and --json.  Once the sessions are destroyed it
# ends with status 5 (a hang was reported).  A bad URL and an unreachable
# relayd are errors, not hangs.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

note "usage and unreachable relayd"
rc=0; "$NG_BIN" watch http://127.0.0.1 >/dev/null 2>"$NG_TMP/e1" || rc=$?
assert_eq "$rc" 2 "watch on a URL that is no relayd's"
rc=0; "$NG_BIN" watch net://127.0.0.1:1 --stuck 1e-300 >/dev/null 2>"$NG_TMP/e0" || rc=$?
assert_eq "$rc" 2 "watch --stuck below 1 ms"
assert_grep "stuck '1e-300': below 1 ms" "$NG_TMP/e0"
port=$(ng_free_ports 1)
rc=0; "$NG_BIN" watch "net://127.0.0.1:$port" >/dev/null 2>"$NG_TMP/e2" || rc=$?
assert_eq "$rc" 1 "watch on a port nobody listens on"
assert_grep "cannot list the relayd's sessions" "$NG_TMP/e2"
ng_relayd_start "$NG_TMP/relay"
ng_host_up hosta
ng_host_up hostb
note "text: the hang across hosts, while the job runs"
ng_live_session hosta "ncclguard-a1-$$"
ng_live_session hostb "ncclguard-b1-$$"
# Attached before the job: it sees each rank's process_info.
"$NG_BIN" watch "$NG_RELAY_URL" --stuck 3 --every 1 >"$NG_TMP/watch.txt" 2>"$NG_TMP/watch.err" &
WATCH=$!
NG_AT_EXIT="kill $WATCH 2>/dev/null; $NG_AT_EXIT"
ng_until_grep "attached to .*ncclguard-b1" "$NG_TMP/watch.txt" $WATCH
ng_hang_job t "text-$$" NCCLGUARD_TIMEOUT=never
ng_until_grep '^  HANG' "$NG_TMP/watch.txt" $WATCH
for r in 0 1 2; do
	[ ! -f "$NG_TMP/t.$r.rc" ] || { show_rank t $r; fail "rank $r ended: no hang"; }
done
kill "$WATCH"
rc=0; wait "$WATCH" || rc=$?
cat "$NG_TMP/watch.txt" "$NG_TMP/watch.err"
assert_eq "$rc" 5 "watch's status after reporting a hang"
hang=$(grep '^  HANG' "$NG_TMP/watch.txt" | head -n 1)
echo "$hang" | grep -q "allreduce seq 52, waiting [0-9]* s: ranks 0-2 (hosta: 0-1, hostb: 2) wait; missing: rank 3 (hostb) (1 ended the communicator)" ||
	fail "hang line: $hang"
assert_grep "job text-$$: 2 hosts, 4 ranks, 1 comm" "$NG_TMP/watch.txt"
assert_grep "^  hosta  *comm [0-9a-f]*: ranks 0-1 at seq" "$NG_TMP/watch.txt"
assert_grep "^  hostb  *comm [0-9a-f]*: rank" "$NG_TMP/watch.txt"
assert_grep "stopped; 1 hang reported" "$NG_TMP/watch.txt"
for h in hosta hostb; do ng_on $h lttng destroy -a >/dev/null; done

note "--json --job: two jobs in the sessions, the watchdogs' timeouts, the end"
ng_live_session hosta "ncclguard-a2-$$"
ng_live_session hostb "ncclguard-b2-$$"
"$NG_BIN" watch "$NG_RELAY_URL" --json --stuck 3 --every 1 --job "json-$$" \
	>"$NG_TMP/watch.json" 2>"$NG_TMP/watch.jerr" &
WJ=$!
NG_AT_EXIT="kill $WJ 2>/dev/null; $NG_AT_EXIT"
ng_until_grep "attached to .*ncclguard-b2" "$NG_TMP/watch.json" $WJ
ng_hang_job o "other-$$" NCCLGUARD_TIMEOUT=never
ng_hang_job j "json-$$" NCCLGUARD_TIMEOUT=4
ng_until_grep '"type": "timeout"' "$NG_TMP/watch.json" $WJ
# The job's sessions end: watch ends by itself.
for h in hosta hostb; do ng_on $h lttng destroy -a >/dev/null; done
ng_until_gone "$WJ" "$NG_TMP/watch.json"
rc=0; wait "$WJ" || rc=$?
cat "$NG_TMP/watch.jerr"
assert_eq "$rc" 5 "watch --json's status after a hang"
python3 - "$NG_TMP/watch.json" "json-$$" <<'PY' || { cat "$NG_TMP/watch.json"; fail "watch --json"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
types = [l["type"] for l in lines]
assert types[-1] == "end" and lines[-1]["reason"] == "sessions_ended", types
assert lines[-1]["hangs_reported"] == 1, lines[-1]   # the other job's is not shown
prog = [l for l in lines if l["type"] == "progress"]
assert prog and all(p["job"] == sys.argv[2] for p in prog if p["job"]), prog
ranks = prog[-1]["ranks"]
assert sorted((r["rank"], r["host"]) for r in ranks) == \
    [(0, "hosta"), (1, "hosta"), (2, "hostb"), (3, "hostb")], ranks
hangs = [l for l in lines if l["type"] == "hang"]
assert len(hangs) == 1, hangs
h = hangs[0]["hang"]
print("hang:", json.dumps(h))
assert hangs[0]["job"] == sys.argv[2]
assert h["op"] == "allreduce" and h["seq"] == 52, h
assert h["waiting_ranks"] == [0, 1, 2] and h["missing_ranks"] == [3], h
assert [w["host"] for w in h["waiting"]] == ["hosta", "hosta", "hostb"], h
assert [(m["host"], m["state"]) for m in h["missing"]] in \
    ([("hostb", "exited")], [("hostb", "not_entered")]), h
assert h["waited_s"] >= 3 and h["unseen_ranks"] == 0, h
touts = [l for l in lines if l["type"] == "timeout"]
assert touts and {t["rank"] for t in touts} <= {0, 1, 2}, touts
assert all(t["seq"] == 52 and t["op"] == "allreduce" for t in touts), touts
PY
echo PASS
