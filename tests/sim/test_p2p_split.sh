#!/bin/sh
# A send/recv ring in one group (every rank sends to the next and receives
# from the previous: only concurrent progress avoids a deadlock), and
# communicators made with ncclCommSplit.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

note "send/recv ring on 4 ranks, larger than a ring buffer"
run_ok "$NG_TMP/ring.log" "$EXAMPLE" --launch 4 --check --op sendrecv --min-bytes 8 \
	--max-bytes 2M --step-factor 16 --iters 2 --warmup 1
assert_eq "$(grep -c 'check OK' "$NG_TMP/ring.log")" 4 "ring: ranks checked OK"

note "split 4 ranks into two halves, every operation on them"
run_ok "$NG_TMP/split.log" "$EXAMPLE" --launch 4 --check --split --mixed --group \
	--min-bytes 64 --max-bytes 64K --step-factor 32 --iters 1 --warmup 1
assert_grep "rank 3: split color 1 -> rank 1 of 2" "$NG_TMP/split.log"
assert_grep "rank 2: split color 0 -> rank 1 of 2" "$NG_TMP/split.log"
assert_eq "$(grep -c 'check OK' "$NG_TMP/split.log")" 4 "split: ranks checked OK"
echo "PASS p2p_split"
