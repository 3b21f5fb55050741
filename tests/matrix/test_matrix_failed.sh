#!/bin/sh
# Pairs that fail are marked with the reason and the run goes on; every
# rank exits 1.
#  - a rank that never joins: ranks 0-2 of a 4-rank job started by hand
#    (RANK, WORLD_SIZE, LOCAL_RANK), rank 3 never started; rendezvous
#    through the file in the output folder;
#  - a rank whose init fails (an injected error): the coordinator tells
#    its peers, whose nonblocking inits end at once with ncclCommAbort;
#  - a rank stuck in an all-reduce (an injected stall): its peer's wait
#    ends at --timeout, the coordinator gives up on the rank, the others
#    go on and --local stops the stuck process.
# How many measured pairs are slow is left alone: on a loaded machine one
# of three tiny pairs can fall below half the median, and that is the
# slow-pair test's business (test_matrix_slow).
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/matrix/common.sh"

cd "$NG_TMP" || fail "no $NG_TMP"
note "rank 3 never joins"
launch job 3 WORLD_SIZE=4 -- "$NG_BIN" matrix $SMALL --timeout 3 -o out
wait_ranks job 3 60
for r in 0 1 2; do
	show_rank job $r
	assert_eq "$(rc_of job $r)" 1 "rank $r exit status"
done
# launch sets WORLD_SIZE=3, then ours: env takes the last, 4.
assert_grep "^ncclguard matrix: 4 ranks, 6 pairs in 3 rounds" job.0.out
assert_grep "^  never joined: ranks 3$" job.0.out
assert_grep "^6 pairs: 3 measured, 3 failed, [0-9]* slow$" job.0.out
check_json out/matrix.json 4 >got || exit 1
cat got
cat >want <<'W'
failed 0-3 rank 3 never joined (no connection within 3 s)
failed 1-3 rank 3 never joined (no connection within 3 s)
failed 2-3 rank 3 never joined (no connection within 3 s)
W
diff want got || fail "failed pairs differ"
[ ! -e out/.rendezvous ] || fail "the rendezvous file outlived the run"
python3 -c '
import json
m = json.load(open("out/matrix.json"))
assert m["ranks"][3]["host"] is None and not m["ranks"][3]["joined"], m["ranks"][3]
' || fail "rank 3 is not shown as absent"

note "rank 3's init fails"
rc=0
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=quiet \
	NCCLGUARD_INJECT="error:code=ncclSystemError,rank=3,op=init" \
	timeout -k 5 120 "$NG_BIN" matrix --local 4 $SMALL --timeout 2 -o init >init.out 2>init.err || rc=$?
cat init.out init.err
assert_eq "$rc" 1 "exit status"
assert_grep "^6 pairs: 3 measured, 3 failed, [0-9]* slow$" init.out
check_json init/matrix.json 4 >got || exit 1
cat got
for r in 0 1 2; do
	assert_grep "^failed $r-3 rank $r: init stopped: its peer failed or left; rank 3: ncclCommInitRankConfig: unhandled system error" got
done

note "rank 3 stalls in its first all-reduce"
rc=0
start=$(date +%s)
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=quiet NCCLGUARD_INJECT="stall:rank=3,op=allreduce" \
	timeout -k 5 120 "$NG_BIN" matrix --local 4 $SMALL --timeout 1 -o stall >stall.out 2>stall.err || rc=$?
cat stall.out stall.err
assert_eq "$rc" 1 "exit status"
assert_grep "^6 pairs: 3 measured, 3 failed, [0-9]* slow$" stall.out
check_json stall/matrix.json 4 >got || exit 1
cat got
# Round 1 pairs rank 3 with rank 0 (the circle method).
assert_grep "^failed 0-3 rank 0: 8-byte all-reduce did not complete within 1 s: the peer stopped taking part; rank 3 gave no result in round 1 within 8 s" got
assert_grep "^failed 1-3 rank 3 gave no result in round 1 within 8 s (stuck in NCCL or CUDA?)" got
[ $(( $(date +%s) - start )) -lt 60 ] || fail "the stuck rank held the run"
# Killed at the end of the run: gone once the kernel has reaped it.
i=0
while pgrep -f "ncclguard matrix.*-o stall" >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
pgrep -f "ncclguard matrix.*-o stall" && fail "the stuck rank outlived the run"
echo ok
