#!/bin/sh
# A rank that skips a collective leaves the others' streams pending, as on
# a GPU: they hang (asleep, not spinning), the job is killed from outside,
# nothing crashes.  Then ncclCommAbort and ncclCommRevoke free a stuck
# stream.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

note "rank 1 skips its 5th call; ranks 0, 2, 3 must hang"
id="$NG_TMP/hang-id"
timeout -k 5 4 "$EXAMPLE" --launch 4 --id-file "$id" --max-bytes 4K --iters 3 --warmup 1 \
	--skip-seq 5 --skip-rank 1 >"$NG_TMP/hang.log" 2>&1 &
job=$!
sleep 2.5
pids=$(pgrep -f -- "--id-file $id" | while read -r p; do
	# the ranks, not the launcher (which has --launch)
	grep -q -- '--launch' "/proc/$p/cmdline" 2>/dev/null || echo "$p"; done)
alive=0; ticks=0
for p in $pids; do
	alive=$((alive + 1))
	t=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)
	ticks=$((ticks + t))
	grep -q '^State:.*S (sleeping)' "/proc/$p/status" || fail "rank $p is not asleep"
done
wait $job
rc=$?
cat "$NG_TMP/hang.log"
assert_eq "$alive" 3 "ranks still waiting after 2.5 s"
assert_eq "$rc" 124 "the job ends only when killed"
assert_grep "rank 1: skipping call 5" "$NG_TMP/hang.log"
assert_no_grep "check OK" "$NG_TMP/hang.log"
# Three stuck ranks in 2.5 s: well under a CPU-second between them.
[ "$ticks" -lt "$(( $(getconf CLK_TCK) / 2 ))" ] || fail "stuck ranks used $ticks ticks of CPU"

note "ncclCommAbort and ncclCommRevoke free a stuck stream"
run_ok "$NG_TMP/abort.log" "$SIMTEST" abort
assert_grep "OK abort unblocked" "$NG_TMP/abort.log"
run_ok "$NG_TMP/revoke.log" "$SIMTEST" revoke
assert_grep "OK revoke unblocked" "$NG_TMP/revoke.log"

note "a process exits at once with a stream stuck"
start=$(date +%s)
run_ok "$NG_TMP/exit.log" "$SIMTEST" exitstuck
assert_grep "OK exiting with a stuck stream" "$NG_TMP/exit.log"
[ $(( $(date +%s) - start )) -lt 5 ] || fail "exit took too long"
echo "PASS hang"
