#!/bin/sh
# Time in NCCL when the shim timed only a sample of the calls: the same
# job recorded with every call timed and with one call in five timed
# (synthetic traces, identical times otherwise) gives each rank the same
# share of its wall time in NCCL within 2%, where the timed calls alone
# would give a fifth of it; the report says how many were timed and keeps
# the timed-only figure as timed_fraction.  Then a real job on the CPU
# backend under `ncclguard run` with the default sampling: 600 calls of
# 1 MiB on 4 ranks, of which the schedule times 406, the same on every
# rank, and every one has its completion; the Perfetto trace says why
# it has GPU slices for 406.  The same in groups, timed as a whole.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
EX="$NG_BUILD/bin/allreduce_example"
[ -x "$GEN" ] || { echo "SKIP: no trace generator (make check builds it)"; exit 0; }

# completed TEXT: the calls (process, seq, p2p seq) with a coll_complete.
# Each call once: the watchdog's probe may also confirm an untimed call
# that is slow to drain (a coll_complete without times, as when a loaded
# machine holds the drain back), which the analyzer counts once.
completed() {
	grep ' ncclguard:coll_complete:' "$1" |
		sed -n 's/.*vpid = \([0-9]*\).* seq = \([0-9]*\), p2p_seq = \([0-9]*\),.*/\1 \2 \3/p' |
		sort -u | wc -l
}

an() {
	"$NG_BIN" analyze "$2" --json "$NG_TMP/$1.json" >"$NG_TMP/$1.txt" 2>"$NG_TMP/$1.err" ||
		{ cat "$NG_TMP/$1.txt" "$NG_TMP/$1.err"; fail "$1: analyze exited $?"; }
}

note "one call in five timed: the estimate against every call timed"
"$GEN" -o "$NG_TMP/all" --ranks 4 --iters 60 >/dev/null || fail "generator"
"$GEN" -o "$NG_TMP/fifth" --ranks 4 --iters 60 --sample 5 >/dev/null || fail "generator"
an all "$NG_TMP/all"
an fifth "$NG_TMP/fifth"
python3 - "$NG_TMP/all.json" "$NG_TMP/fifth.json" <<'EOF' || fail "busy fractions"
import json, sys
full = {c["rank"]: c for c in json.load(open(sys.argv[1]))["comm_fraction"]}
part = {c["rank"]: c for c in json.load(open(sys.argv[2]))["comm_fraction"]}
assert sorted(full) == sorted(part) == [0, 1, 2, 3], (full, part)
for r, c in full.items():
    truth, p = c["fraction"], part[r]
    assert 0.2 < truth < 0.9, c
    assert c["timed_fraction"] == truth, c
    assert abs(p["fraction"] - truth) <= 0.02 * truth, (r, p, truth)
    assert p["timed_fraction"] < 0.3 * truth, (r, p, truth)
EOF
assert_grep "13 of 60 collectives GPU-timed; the others counted at their rank's mean time" \
	"$NG_TMP/fifth.txt"
if grep -q "collectives GPU-timed" "$NG_TMP/all.txt"; then
	fail "every call timed, yet the summary speaks of an estimate"
fi

note "a job of 1 MiB calls under run: every rank times the same 406 of 600"
if [ ! -x "$EX" ] || [ ! -f "$NG_SIM/libnccl.so.2" ]; then
	echo "SKIP: CPU backend not built"
	echo ok
	exit 0
fi
rc=0
LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=100 NCCLSIM_LATENCY_US=20 \
	timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/job" -- "$EX" --launch 4 --op allreduce \
	--min-bytes 1M --max-bytes 1M --iters 600 --warmup 0 >"$NG_TMP/job.out" 2>"$NG_TMP/job.err" ||
	rc=$?
[ "$rc" = 0 ] || { cat "$NG_TMP/job.err"; fail "job exited $rc"; }
assert_grep "(0 events lost)" "$NG_TMP/job.err"
an job "$NG_TMP/job"
ng_trace_text "$NG_TMP/job" "$NG_TMP/job.text"
# Every call completed, 256 + 128 (one in 2 up to 512) + 22 (one in 4 up
# to 600) of them with times, on each rank.
n=$(completed "$NG_TMP/job.text")
assert_eq "$n" 2400 "calls with a coll_complete (600 on each of 4 ranks)"
n=$(grep ' ncclguard:coll_complete:' "$NG_TMP/job.text" | grep -vc 'gpu_end_ns = 0,')
assert_eq "$n" 1624 "coll_complete events with GPU times (406 on each of 4 ranks)"
python3 - "$NG_TMP/job.json" <<'EOF' || fail "the job's report"
import json, sys
r = json.load(open(sys.argv[1]))
rows = [c for c in r["collectives"] if c["op"] == "allreduce"]
assert len(rows) == 1, rows
c = rows[0]
# A collective counts as timed if any rank timed it: 406 means every
# rank picked the same ones.
assert (c["calls"], c["timed"]) == (600, 406), c
assert c["busbw_gbps"] > 0, c
assert r["incomplete"] == [] and r["hangs"] == [], (r["incomplete"], r["hangs"])
for f in r["comm_fraction"]:
    assert f["fraction"] > f["timed_fraction"] > 0, f
EOF
note "the Perfetto trace: every call, the timed ones' GPU slices, and why so few"
"$NG_BIN" analyze "$NG_TMP/job" --chrome "$NG_TMP/job.chrome.json" >/dev/null 2>&1 ||
	fail "analyze --chrome"
python3 - "$NG_TMP/job.chrome.json" <<'EOF' || fail "the job's Chrome trace"
import json, sys
d = json.load(open(sys.argv[1]))
kinds = {}
for e in d["traceEvents"]:
    kinds[(e.get("ph"), e.get("cat"))] = kinds.get((e.get("ph"), e.get("cat")), 0) + 1
assert kinds.get(("X", "enqueue")) == 2400, kinds
assert kinds.get(("X", "nccl")) == 1624, kinds
o = d["otherData"]
assert (o["collectives"], o["gpu_timed"]) == (600, 406), o
assert "406 of 600 collectives the shim timed" in o["timing_note"], o
EOF

note "groups of 1 MiB calls: timed whole, 256 + 1 in 2 of 400, every member completed"
rc=0
LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=100 NCCLSIM_LATENCY_US=20 \
	timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/grp" -- "$EX" --launch 4 --op allreduce --group \
	--min-bytes 1M --max-bytes 1M --iters 400 --warmup 0 >"$NG_TMP/grp.out" 2>"$NG_TMP/grp.err" ||
	rc=$?
[ "$rc" = 0 ] || { cat "$NG_TMP/grp.err"; fail "group job exited $rc"; }
an grp "$NG_TMP/grp"
ng_trace_text "$NG_TMP/grp" "$NG_TMP/grp.text"
# Each group: an all-reduce and a ring send and receive, on every rank.
n=$(completed "$NG_TMP/grp.text")
assert_eq "$n" 4800 "calls with a coll_complete (3 per group on each of 4 ranks)"
python3 - "$NG_TMP/grp.json" <<'EOF' || fail "the group job's report"
import json, sys
r = json.load(open(sys.argv[1]))
rows = {c["op"]: c for c in r["collectives"]}
assert (rows["allreduce"]["calls"], rows["allreduce"]["timed"]) == (400, 328), rows
assert (rows["send"]["calls"], rows["send"]["timed"]) == (1600, 1312), rows
assert r["incomplete"] == [] and r["hangs"] == [], (r["incomplete"], r["hangs"])
EOF
echo ok
