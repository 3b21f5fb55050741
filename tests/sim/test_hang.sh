#!/bin/sh
# A rank that skips a collective leaves the others' streams pending, as on
# a GPU: they hang (asleep, not spinning: no CPU over 2 s), the job is
# killed from outside, nothing crashes.  Then ncclCommAbort and ncclCommRevoke free a stuck
# stream.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

note "rank 1 skips its 5th call; ranks 0, 2, 3 must hang"
id="$NG_TMP/hang-id"
"$EXAMPLE" --launch 4 --id-file "$id" --max-bytes 4K --iters 3 --warmup 1 \
	--skip-seq 5 --skip-rank 1 >"$NG_TMP/hang.log" 2>&1 &
job=$!
# ranks: the ranks' pids, not the launcher's (which has --launch).
ranks() {
	pgrep -f -- "--id-file $id" | while read -r p; do
		grep -q -- '--launch' "/proc/$p/cmdline" 2>/dev/null || echo "$p"; done
}
# ticks PIDS: their CPU time so far, in clock ticks.
ticks() {
	_t=0
	for _p in $1; do
		_t=$((_t + $(awk '{print $14 + $15}' "/proc/$_p/stat" 2>/dev/null || echo 0)))
	done
	echo $_t
}
# Hung: rank 1 gone past its skip and exited, the three others asleep and
# using next to no CPU over 2 s (under 50 ms between them).  However long a loaded machine takes to get
# there (at most 60 s); then they must stay so.
i=0
while :; do
	pids=$(echo $(ranks))
	alive=$(echo $pids | wc -w)
	asleep=0
	for p in $pids; do
		grep -q '^State:.*S (sleeping)' "/proc/$p/status" 2>/dev/null && asleep=$((asleep + 1))
	done
	if [ "$alive" = 3 ] && [ "$asleep" = 3 ] && grep -q "rank 1: skipping call 5" "$NG_TMP/hang.log"; then
		t0=$(ticks "$pids")
		sleep 2
		t1=$(ticks "$pids")
		[ $((t1 - t0)) -lt $(($(getconf CLK_TCK) / 20)) ] && break
	fi
	[ $i -lt 300 ] && kill -0 $job 2>/dev/null ||
		{ cat "$NG_TMP/hang.log"; fail "no hang of 3 sleeping ranks: $alive alive, $asleep asleep"; }
	sleep 0.2; i=$((i + 1))
done
note "hung: ranks $pids asleep, $((t1 - t0)) ticks of CPU in 2 s between them"
for p in $pids; do
	grep -q '^State:.*S (sleeping)' "/proc/$p/status" || fail "rank $p is not asleep"
done
kill -0 $job 2>/dev/null || fail "the job ended on its own"
kill $pids $job 2>/dev/null
rc=0
wait $job || rc=$?
cat "$NG_TMP/hang.log"
assert_no_grep "check OK" "$NG_TMP/hang.log"

note "ncclCommAbort and ncclCommRevoke free a stuck stream"
run_ok "$NG_TMP/abort.log" "$SIMTEST" abort
assert_grep "OK abort unblocked" "$NG_TMP/abort.log"
run_ok "$NG_TMP/revoke.log" "$SIMTEST" revoke
assert_grep "OK revoke unblocked" "$NG_TMP/revoke.log"

note "a process exits at once with a stream stuck"
# As long as the same 2 ranks take for init, a call and an abort here,
# give or take 5 s: on a loaded machine both are slow.
start=$(date +%s)
run_ok "$NG_TMP/abort2.log" "$SIMTEST" abort
ref=$(( $(date +%s) - start ))
start=$(date +%s)
run_ok "$NG_TMP/exit.log" "$SIMTEST" exitstuck
assert_grep "OK exiting with a stuck stream" "$NG_TMP/exit.log"
took=$(( $(date +%s) - start ))
[ "$took" -lt $((ref + 5)) ] || fail "exit took $took s, a job that aborts $ref s"
echo "PASS hang"
