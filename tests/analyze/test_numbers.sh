#!/bin/sh
# No number a reader can catch out.  Two cases:
#
# 1. One rank making 8-byte all-reduces on the CPU backend as fast as it
#    can, recorded with a sampling that times one call in a million: the
#    rank's window fills with calls whose confirmations come in batches.
#    A comm of one rank is never "not seen on every rank" and never
#    exceeds a matching window; its time in NCCL is at most its wall
#    time; the estimate says it rests on one timed call, and the row of
#    200,000 calls built from that one call gives no p50 or p99.  (A
#    recording may lose some of them: the calls seen are counted.)
# 2. The same program under valgrind, as a trace: 110,000 calls over
#    10 s, the first timed at 1.28 s (its setup), the others untimed.
#    The mean of that one call given to every other made rank 0 "100.0%
#    (140503.25 s)" busy; now its time is at most its wall time, and the
#    summary, report.json and the HTML say what the figure rests on.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EX="$NG_BUILD/bin/allreduce_example"
GEN="$NG_BUILD/tests/ng_trace_gen"
[ -x "$GEN" ] || { echo "SKIP: no trace generator (make check builds it)"; exit 0; }

# check REPORT WALL_S [CALLS]: what both cases must hold; prints the
# calls (a recording may lose events: then fewer than were made).
check() {
	python3 - "$@" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
wall = float(sys.argv[2])
[row] = [x for x in r["collectives"] if x["op"] == "allreduce"]
calls = int(sys.argv[3]) if len(sys.argv) > 3 else row["calls"]
assert calls > 100000, row
assert not [i for i in r["incomplete"] if i["what"] == "window_exceeded"], r["incomplete"]
[c] = r["comm_fraction"]
assert 0 < c["fraction"] <= 1, c
assert 0 < c["busy_s"] <= wall, (c, wall)
assert c["estimate_timed_calls"] == 1 and c["estimated_calls"] == calls - 1, c
assert row["calls"] == calls and row["timed"] == 1, row
assert row["time_us"]["p50"] is None and row["time_us"]["p99"] is None, row
print(calls)
EOF
}

note "one rank, 8-byte all-reduces as fast as it can, one call in a million timed"
if [ -x "$EX" ] && [ -f "$NG_SIM/libnccl.so.2" ]; then
	t0=$(date +%s.%N)
	LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_SAMPLE=1000000 \
		timeout -k 5 300 "$NG_BIN" run -o "$NG_TMP/job" -- "$EX" --min-bytes 8 \
		--max-bytes 8 --iters 200000 --warmup 0 >"$NG_TMP/job.out" 2>"$NG_TMP/job.err" ||
		{ cat "$NG_TMP/job.err"; fail "the job failed"; }
	wall=$(awk "BEGIN { print $(date +%s.%N) - $t0 }")
	"$NG_BIN" analyze "$NG_TMP/job" --json "$NG_TMP/job.json" --html "$NG_TMP/job.html" \
		>"$NG_TMP/job.txt" 2>"$NG_TMP/job.aerr" || { cat "$NG_TMP/job.aerr"; fail "analyze"; }
	cat "$NG_TMP/job.txt"
	n=$(check "$NG_TMP/job.json" "$wall") || fail "the job's report"
	assert_no_grep "not seen on every rank" "$NG_TMP/job.txt"
	assert_grep "$((n - 1)) untimed at the mean of 1 timed call" "$NG_TMP/job.txt"
	assert_grep "\\^ time of 1 timed call of $n;" "$NG_TMP/job.txt"
	assert_grep "$((n - 1)) untimed at the mean of 1 timed call" "$NG_TMP/job.html"
	assert_grep "(time of 1 timed call of $n;" "$NG_TMP/job.html"
else
	echo "(CPU backend not built: the recorded case is left out)"
fi

note "the valgrind case: 110,000 calls in 10 s, the first timed at 1.28 s"
awk 'BEGIN {
	c = "5eedc0ffee000001"
	print "0 0 proc 0 1"
	print "0 100 initb " c " 1 0"
	print "0 200 inite " c " 1 0"
	done = 0
	for (i = 1; i <= 110000; i++) {
		t = 1000 + i * 90
		if (!done && t > 1281100) {
			print "0 1281100 done " c " 1 0 allreduce 8 1090 1281090 1 -1"
			done = 1
		}
		printf "0 %d enq %s %d 0 allreduce 8 -1 1 0 %d 1\n", t, c, i, t - 5
	}
	# the watchdog confirms the last (zero times), then the comm ends
	printf "0 %d done %s 110000 0 allreduce 8 0 0 1 -1\n", t + 50000, c
	printf "0 %d end %s destroy\n", t + 60000, c
}' >"$NG_TMP/script"
"$GEN" -o "$NG_TMP/vg" --ranks 1 --script "$NG_TMP/script" >/dev/null || fail "generator"
"$NG_BIN" analyze "$NG_TMP/vg" --json "$NG_TMP/vg.json" --html "$NG_TMP/vg.html" \
	>"$NG_TMP/vg.txt" 2>"$NG_TMP/vg.err" || { cat "$NG_TMP/vg.err"; fail "analyze"; }
cat "$NG_TMP/vg.txt"
# The rank's wall time: its first event to its last, 9.96 s.
check "$NG_TMP/vg.json" 9.97 110000 >/dev/null || fail "the valgrind case's report"
python3 - "$NG_TMP/vg.json" <<'EOF' || fail "the valgrind case's estimate"
import json, sys
r = json.load(open(sys.argv[1]))
[c] = r["comm_fraction"]
assert c["capped"] is True and c["fraction"] == 1.0, c
EOF
assert_no_grep "not seen on every rank" "$NG_TMP/vg.txt"
assert_grep "100.0%  (9.96 s; 109999 untimed at the mean of 1 timed call, capped at wall time)" \
	"$NG_TMP/vg.txt"
assert_grep "\\^ time of 1 timed call of 110000; the others' is not known" "$NG_TMP/vg.txt"
assert_grep "100.0% (9.96 s; 109999 untimed at the mean of 1 timed call, capped at wall time)" \
	"$NG_TMP/vg.html"
echo ok
