#!/bin/sh
# A burst of small all-reduces faster than the watchdog's idle poll, with
# GPU timing sampled so that most calls carry only their enqueue record:
# every call's coll_enqueue reaches the trace once and in call order (a
# per-thread ring wakes the watchdog when half full; a thread that finds
# it full drains it itself), and 1 call in 64 is timed; then the default
# rate sampling bounds the timed calls, and the analyzer matches them all.
# Only timed calls carry a host exit time (a second clock read costs the
# caller as much as the rest of the record).
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/tracer/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_LOG=debug
ITERS=20000 WARMUP=5 N=$((20000 + 5))
mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }
t0=$(mono_ns)
timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/trace" -- env NCCLGUARD_SAMPLE=64 "$EXAMPLE" --launch 2 \
	--min-bytes 8 --max-bytes 8 --iters $ITERS --warmup $WARMUP >"$NG_TMP/out" 2>"$NG_TMP/err" ||
	{ tail -n 20 "$NG_TMP/out" "$NG_TMP/err"; fail "burst job failed"; }
t1=$(mono_ns)
assert_grep "(0 events lost)" "$NG_TMP/err"
ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"

# timed_completions FILE PID: the coll_complete events with GPU times.
timed_completions() {
	grep "ncclguard:coll_complete: .*vpid = $2," "$1" | grep -vc "gpu_end_ns = 0," || true
}

sed -n 's/^ncclguard\[rank [0-9?]* pid \([0-9]*\)\].*/\1/p' "$NG_TMP/err" | sort -u >"$NG_TMP/pids"
assert_eq "$(wc -l <"$NG_TMP/pids")" 2 "ranks that logged"
seq 1 $N >"$NG_TMP/want"
for pid in $(cat "$NG_TMP/pids"); do
	note "pid $pid: one coll_enqueue per call, seq 1..$N"
	grep "ncclguard:coll_enqueue: .*vpid = $pid," "$NG_TMP/text" |
		sed 's/.* seq = \([0-9]*\),.*/\1/' >"$NG_TMP/seqs.$pid"
	cmp -s "$NG_TMP/seqs.$pid" "$NG_TMP/want" ||
		fail "pid $pid: $(wc -l <"$NG_TMP/seqs.$pid") enqueue events, expected seq 1..$N once each, in order"
	note "pid $pid: sampled GPU timing, 1 call in 64"
	assert_eq "$(timed_completions "$NG_TMP/text" "$pid")" $(((N + 63) / 64)) "timed coll_complete events"
	# And the watchdog's confirmations of the untimed tail, a few at most.
	n=$(($(ng_count "$NG_TMP/text" coll_complete "$pid") - (N + 63) / 64))
	[ "$n" -ge 0 ] && [ "$n" -le 4 ] || fail "pid $pid: $n completions without times"
	note "pid $pid: a host exit time with the GPU time only, never before the entry"
	grep "ncclguard:coll_enqueue: .*vpid = $pid," "$NG_TMP/text" |
		sed 's/.* seq = \([0-9]*\),.* enter_ns = \([0-9]*\), exit_ns = \([0-9]*\), enter_coarse = \([01]\).*/\2 \3 \4 \1/' \
		>"$NG_TMP/hostt.$pid"
	assert_eq "$(awk '$2 != 0' "$NG_TMP/hostt.$pid" | wc -l)" $(((N + 63) / 64)) "enqueues with an exit time"
	assert_eq "$(awk '$2 != 0 && $2 < $1' "$NG_TMP/hostt.$pid" | wc -l)" 0 "exit times before the entry"
	# A small call's arrival is stamped one call in 8 by seq, and when it
	# is GPU-timed (seq 1, 65, ...); the others carry the watchdog's coarse
	# time, flagged.  The TSC's ticks, where it is used, are put on
	# CLOCK_MONOTONIC by the watchdog: every stamped time inside the job,
	# in call order (give or take a recalibration's step of nanoseconds);
	# a coarse one is never after the next stamped arrival, and lags the
	# job's start by a tick and a jiffy at most.
	note "pid $pid: arrivals stamped 1 in 8 and when timed, coarse otherwise"
	awk '{ want = ($4 % 8 != 0 && ($4 - 1) % 64 != 0) }
	$3 != want { print "FAIL: seq " $4 ": enter_coarse " $3 ", expected " want; err = 1; exit }
	END { exit err }' "$NG_TMP/hostt.$pid" || fail "pid $pid: which arrivals are stamped"
	note "pid $pid: host times on CLOCK_MONOTONIC, within the job, in call order"
	awk -v t0="$t0" -v t1="$t1" '
	function bad(m) { if (!err) print "FAIL: line " NR ": " m; err = 1 }
	{ e[NR] = $1; c[NR] = $3 }
	$3 == 0 && ($1 < t0 || $1 > t1) || $3 == 1 && ($1 + 20000000 < t0 || $1 > t1) ||
	($2 != 0 && $2 > t1) { bad($0 " outside the job [" t0 ", " t1 "]") }
	$3 == 0 && prev && $1 + 1000 < prev { bad("enter " $1 " before the previous call'"'"'s " prev) }
	$3 == 0 { prev = $1 }
	END {
		for (i = NR; i >= 1; i--)
			if (!c[i]) next_st = e[i]
			else if (next_st && e[i] > next_st + 1000) { bad("coarse enter " e[i] " after the next stamped " next_st); break }
		exit err
	}' "$NG_TMP/hostt.$pid" || fail "pid $pid: host times"
done
grep "recorded host times" "$NG_TMP/err" | head -n 1
grep "enqueue records" "$NG_TMP/err" | head -n 2

note "default sampling: a burst of 257 timed calls, then at most 100 a second"
start=$(date +%s%N)
timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/trace2" -- "$EXAMPLE" --launch 1 \
	--min-bytes 8 --max-bytes 8 --iters $ITERS --warmup $WARMUP >"$NG_TMP/out2" 2>"$NG_TMP/err2" ||
	{ tail -n 20 "$NG_TMP/out2" "$NG_TMP/err2"; fail "second burst job failed"; }
ms=$(( ($(date +%s%N) - start) / 1000000 ))
ng_trace_text "$NG_TMP/trace2" "$NG_TMP/text2"
pid=$(sed -n 's/^ncclguard\[rank [0-9?]* pid \([0-9]*\)\].*/\1/p' "$NG_TMP/err2" | head -n 1)
assert_eq "$(ng_count "$NG_TMP/text2" coll_enqueue "$pid")" $N "coll_enqueue events"
c=$(timed_completions "$NG_TMP/text2" "$pid")
[ "$c" -ge 257 ] && [ "$c" -le $((257 + ms / 10 + 1)) ] ||
	fail "$c timed coll_complete events in a $ms ms job: expected 257 to $((257 + ms / 10 + 1))"
"$NG_BIN" analyze "$NG_TMP/trace2" --chrome "$NG_TMP/c2.json" >"$NG_TMP/an2" 2>&1 ||
	{ cat "$NG_TMP/an2"; fail "analyze failed"; }
python3 "$NG_ROOT/tests/analyze/check_chrome.py" "$NG_TMP/c2.json" || fail "Chrome trace"
assert_grep "$N collectives matched" "$NG_TMP/an2"
# No hang.  A burst faster than the completions come may fill the
# analyzer's window, which it then says (window_exceeded): not a finding
# about the job.
assert_no_grep "hang:" "$NG_TMP/an2"
exit 0
