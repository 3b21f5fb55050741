#!/bin/sh
# End to end on real LTTng: a 4-rank job (one process per rank, rank 1
# sleeps 5 ms before each all-reduce) recorded with `ncclguard run` through
# libncclguard-tp.so, then analysed: every collective matched, rank 1 the
# straggler, about 5 ms late, reports written.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/ng_lttng_job"
[ -x "$JOB" ] || fail "$JOB not built"

note "ncclguard run -- ng_lttng_job 4 ranks, 30 all-reduces, rank 1 5 ms late"
"$NG_BIN" run -o "$NG_TMP/trace" -- "$JOB" 4 30 1 5 > "$NG_TMP/run.out" 2> "$NG_TMP/run.err" ||
	{ cat "$NG_TMP/run.out" "$NG_TMP/run.err"; fail "run failed"; }
"$NG_BIN" analyze "$NG_TMP/trace" --json "$NG_TMP/r.json" --chrome "$NG_TMP/c.json" \
	--html "$NG_TMP/r.html" > "$NG_TMP/out" 2> "$NG_TMP/err" ||
	{ cat "$NG_TMP/out" "$NG_TMP/err"; fail "analyze failed"; }
cat "$NG_TMP/out"
assert_grep "4 ranks on 1 host, 30 collectives matched" "$NG_TMP/out"
assert_grep "straggler: rank 1 arrived last in 100% of all-reduces" "$NG_TMP/out"
python3 - "$NG_TMP/r.json" <<'PY' || fail "report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "ncclguard-report/1"
assert [x["rank"] for x in r["ranks"]] == [0, 1, 2, 3], r["ranks"]
s = r["stragglers"]
assert len(s) == 1 and s[0]["rank"] == 1 and s[0]["late_calls"] == 30, s
assert 4500 < s[0]["mean_late_us"] < 20000, s
c = r["collectives"]
assert len(c) == 1 and c[0]["op"] == "allreduce" and c[0]["calls"] == 30, c
assert c[0]["bytes"] == 1048576 and c[0]["timed"] == 30, c
assert r["hangs"] == [] and r["mismatches"] == [] and r["lost_events"] == 0
PY
python3 "$NG_ROOT/tests/analyze/check_chrome.py" "$NG_TMP/c.json" || fail "Chrome trace"

# The shim stamps a small collective's arrival one call in 8 (by seq, the
# same calls on every rank) and flags the others' coarse time: stragglers
# come from the stamped arrivals only, and coarse ones draw no marker.
note "coarse arrivals: rank 1 late on the coarse ones only is no straggler"
"$NG_BIN" run -o "$NG_TMP/coarse" -- "$JOB" 4 32 1 5 2 > "$NG_TMP/coarse.out" 2>&1 ||
	{ cat "$NG_TMP/coarse.out"; fail "coarse run failed"; }
"$NG_BIN" analyze "$NG_TMP/coarse" --json "$NG_TMP/rc.json" --chrome "$NG_TMP/cc.json" \
	> "$NG_TMP/outc" 2>&1 || { cat "$NG_TMP/outc"; fail "analyze (coarse) failed"; }
assert_grep "4 ranks on 1 host, 32 collectives matched" "$NG_TMP/outc"
assert_no_grep "straggler:" "$NG_TMP/outc"
python3 - "$NG_TMP/rc.json" "$NG_TMP/cc.json" <<'PY' || fail "coarse arrivals"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["stragglers"] == [], r["stragglers"]
c = json.load(open(sys.argv[2]))["traceEvents"]
marks = sorted(e["args"]["seq"] for e in c if e.get("cat") == "enqueue")
assert marks == sorted([8, 16, 24, 32] * 4), marks
PY
note "coarse arrivals: rank 1 late on every call is named from the stamped ones"
"$NG_BIN" run -o "$NG_TMP/coarse2" -- "$JOB" 4 64 1 5 1 > "$NG_TMP/coarse2.out" 2>&1 ||
	{ cat "$NG_TMP/coarse2.out"; fail "coarse run 2 failed"; }
"$NG_BIN" analyze "$NG_TMP/coarse2" --json "$NG_TMP/rc2.json" > "$NG_TMP/outc2" 2>&1 ||
	{ cat "$NG_TMP/outc2"; fail "analyze (coarse 2) failed"; }
python3 - "$NG_TMP/rc2.json" <<'PY' || fail "coarse arrivals, straggler"
import json, sys
s = json.load(open(sys.argv[1]))["stragglers"]
assert len(s) == 1 and s[0]["rank"] == 1 and s[0]["late_calls"] == 8, s
PY
