#!/bin/sh
# A hang dump whose process's timeout events are not in the trace: the
# watchdog fired (the dump says so) but the process's last events never
# reached the trace (a process killed while writing to LTTng's per-user
# buffers can hold a whole stream back).  The analyzer must still find
# the hang, from the dump, and say that the trace lacks those events.
. "$NG_ROOT/tests/lib.sh"
command -v python3 >/dev/null || fail "python3 not installed"
G="$NG_ROOT/tests/analyze/traces/real_slow_rank/trace"
# In that trace four ranks (pids 697-700 on host vm) made allreduces
# seq 1..9 on comm 9d529fc2c3c96a54; rank 2's dump says it waited on seq 10.
dump() {	# pid rank job
	cat <<JSON
{
  "schema": "ncclguard-hang/1",
  "reason": "collective timeout",
  "host": "vm", "job": $3, "pid": $1, "rank": $2, "local_rank": $2,
  "timeout_s": 2, "action": "exit",
  "inflight": [
    {"comm_hash": "9d529fc2c3c96a54", "op": "allreduce", "seq": 11, "p2p_seq": 0, "bytes": 8, "peer_or_root": -1, "stream": "0x1", "waited_s": 3.0, "call_site": ""},
    {"comm_hash": "9d529fc2c3c96a54", "op": "allreduce", "seq": 10, "p2p_seq": 0, "bytes": 8, "peer_or_root": -1, "stream": "0x1", "waited_s": 3.5, "call_site": ""}
  ],
  "host_calls": [
  ],
  "comms": [
  ],
  "splits_in_progress": [
  ]
}
JSON
}
mkdir -p "$NG_TMP/D" && cp -r "$G/vm" "$NG_TMP/D/" && mkdir "$NG_TMP/D/vm/hang" || fail "cannot copy the trace"
"$NG_BIN" analyze "$NG_TMP/D" --json "$NG_TMP/before.json" >/dev/null 2>&1 || fail "analyze failed"
dump 699 2 null >"$NG_TMP/D/vm/hang/ncclguard-hang-rank2-pid699.json"
"$NG_BIN" analyze "$NG_TMP/D" --json "$NG_TMP/r.json" >"$NG_TMP/sum" 2>&1 ||
	{ cat "$NG_TMP/sum"; fail "analyze failed"; }
python3 - "$NG_TMP/before.json" "$NG_TMP/r.json" <<'PY' || fail "see above"
import json, sys
before, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert before['hangs'] == [] and before['timeouts'] == [], "the trace alone has a hang"
inc = [i['detail'] for i in r['incomplete'] if i['what'] == 'timeout_not_in_trace']
assert len(inc) == 1 and 'rank 2 (vm, pid 699)' in inc[0] and 'found from the dump' in inc[0], inc
# The oldest call the dump names, as the watchdog reports it.
t = r['timeouts']
assert [(x['rank'], x['seq'], x['action']) for x in t] == [(2, 10, 'exit')], t
h = r['hangs']
assert len(h) == 1 and h[0]['seq'] == 10 and h[0]['timed_out'], h
assert h[0]['waiting_ranks'] == [2] and h[0]['missing_ranks'] == [0, 1, 3], h
# The others ended the comm normally in that trace.
assert h[0]['rank_state'] == {'0': 'exited', '1': 'exited', '2': 'waiting', '3': 'exited'}, \
    h[0]['rank_state']
d = r['hang_dumps']
assert len(d) == 1 and d[0]['rank'] == 2 and d[0]['pid'] == 699, d
assert [(c['where'], c['seq']) for c in d[0]['calls']] == [('gpu', 11), ('gpu', 10)], d
kinds = [f['kind'] for f in r['findings']]
assert kinds[0] == 'hang' and 'incomplete' in kinds, kinds
PY
assert_grep "^  !! hang: allreduce seq 10 .*rank 2 waiting" "$NG_TMP/sum"
echo "ok"
