#!/bin/sh
# The calls after a comm's last timed one, under the default sampling: 2
# ranks make 1000 8-byte all-reduces and 1000 send/recv exchanges, faster
# than the sampling's rate, so most go untimed; then the job pauses 2.5 s
# with the comm left undestroyed (a checkpoint, an evaluation) and makes a
# call on a new comm, so the trace goes on.  The watchdog's probe confirmed
# the tail on the GPU, and the trace must say so: no hang, nothing in
# flight, every call counted.  Without the confirmation the report named
# the first untimed all-reduce and a send as hung, and counted 257 calls.
# Then the same job with GPU timing off (NCCLGUARD_TIMING=0), whose trace
# has no completion at all: its calls are counted and said unknown, not
# reported hung.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
SIMTEST="$NG_BUILD/tests/sim/simtest"
if [ ! -x "$SIMTEST" ] || [ ! -f "$NG_SIM/libnccl.so.2" ]; then
	echo "SKIP: CPU backend not built"
	exit 0
fi

rc=0
LD_LIBRARY_PATH="$NG_SIM" timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/job" -- \
	"$SIMTEST" tail 1000 2500 >"$NG_TMP/job.out" 2>"$NG_TMP/job.err" || rc=$?
[ "$rc" = 0 ] || { cat "$NG_TMP/job.out" "$NG_TMP/job.err"; fail "job exited $rc"; }
assert_grep "OK tail 0" "$NG_TMP/job.out"
assert_grep "OK tail 1" "$NG_TMP/job.out"
assert_grep "(0 events lost)" "$NG_TMP/job.err"

note "the report: no hang, nothing in flight, every call counted"
rc=0
"$NG_BIN" analyze "$NG_TMP/job" --json "$NG_TMP/r.json" --fail-on hang >"$NG_TMP/r.txt" \
	2>"$NG_TMP/r.err" || rc=$?
[ "$rc" = 0 ] || { cat "$NG_TMP/r.txt" "$NG_TMP/r.err"; fail "analyze --fail-on hang exited $rc"; }
assert_no_grep "in flight" "$NG_TMP/r.txt"
python3 - "$NG_TMP/r.json" <<'EOF' || fail "report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["hangs"] == [], r["hangs"]
rows = {(c["op"], c["bytes"]): c for c in r["collectives"]}
ar = rows[("allreduce", 8)]
# Every all-reduce, though a quarter were timed.
assert ar["calls"] == 1000 and 200 <= ar["timed"] < 1000, ar
assert rows[("allreduce", 4)]["calls"] == 1, rows
# Sends are counted per rank that sent: 1000 each.
assert rows[("send", 8)]["calls"] == 2000, rows[("send", 8)]
EOF

note "the trace: the last calls of each rank have a completion"
ng_trace_text "$NG_TMP/job" "$NG_TMP/job.text"
grep "ncclguard:coll_complete:" "$NG_TMP/job.text" >"$NG_TMP/complete.text"
# Each rank's last all-reduce (seq 1000) and last send or recv (p2p_seq
# 2000): completed by a probe's confirmation, or timed themselves.
for kind in "seq = 1000, p2p_seq = 0," "seq = 0, p2p_seq = 2000,"; do
	assert_eq "$(grep -c "$kind" "$NG_TMP/complete.text")" 2 "completions with $kind"
done
grep "gpu_start_ns = 0, gpu_end_ns = 0," "$NG_TMP/complete.text" >"$NG_TMP/confirm.text" ||
	fail "no completion without times: nothing confirmed the untimed calls"
# A confirmation per probe, not per call: the untimed calls have none.
n=$(wc -l <"$NG_TMP/complete.text")
[ "$n" -lt 2000 ] || fail "$n completions for 6002 calls: one per untimed call?"

note "NCCLGUARD_TIMING=0: no completion at all, said unknown, not hung"
rc=0
LD_LIBRARY_PATH="$NG_SIM" timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/off" -- \
	env NCCLGUARD_TIMING=0 "$SIMTEST" tail 300 1500 >"$NG_TMP/off.out" 2>"$NG_TMP/off.err" || rc=$?
[ "$rc" = 0 ] || { cat "$NG_TMP/off.out" "$NG_TMP/off.err"; fail "timing-off job exited $rc"; }
rc=0
"$NG_BIN" analyze "$NG_TMP/off" --json "$NG_TMP/off.json" --fail-on hang >"$NG_TMP/off.txt" \
	2>"$NG_TMP/off.aerr" || rc=$?
[ "$rc" = 0 ] || { cat "$NG_TMP/off.txt" "$NG_TMP/off.aerr"; fail "timing off: analyze --fail-on hang exited $rc"; }
python3 - "$NG_TMP/off.json" <<'EOF' || fail "timing-off report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["hangs"] == [], r["hangs"]
rows = {(c["op"], c["bytes"]): c for c in r["collectives"]}
assert rows[("allreduce", 8)]["calls"] == 300 and rows[("allreduce", 8)]["timed"] == 0, rows
notes = [i for i in r["incomplete"] if i["what"] == "timing_off"]
assert len(notes) == 1 and "NCCLGUARD_TIMING=0" in notes[0]["detail"], r["incomplete"]
EOF
# The untimed share is put down to timing off, not to the sampling
# (NCCLGUARD_SAMPLE would change nothing there).
assert_grep "collectives GPU-timed;.*(GPU timing was off: NCCLGUARD_TIMING=0)" "$NG_TMP/off.txt"
assert_no_grep "NCCLGUARD_SAMPLE=1" "$NG_TMP/off.txt"
echo ok
