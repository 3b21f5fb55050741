#!/bin/sh
# Every collective and send/recv, checked, on 2, 3 and 4 ranks of the
# example (one process per rank), in and out of groups.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

note "2 ranks, every operation, 8 B .. 1 MiB"
run_ok "$NG_TMP/2.log" "$EXAMPLE" --launch 2 --check --mixed --min-bytes 8 --max-bytes 1M \
	--step-factor 32 --iters 2 --warmup 1
assert_eq "$(grep -c 'check OK' "$NG_TMP/2.log")" 2 "ranks checked OK"
assert_eq "$(grep -c ' ok$' "$NG_TMP/2.log")" 36 "rows checked ok"

note "4 ranks, every operation, grouped with a send/recv ring"
run_ok "$NG_TMP/4.log" "$EXAMPLE" --launch 4 --check --mixed --group --min-bytes 64 \
	--max-bytes 256K --step-factor 64 --iters 2 --warmup 1
assert_eq "$(grep -c 'check OK' "$NG_TMP/4.log")" 4 "ranks checked OK"
assert_no_grep WRONG "$NG_TMP/4.log"

note "3 ranks: int8 products wrap, int32 max, double average"
for t in "int8 prod" "int32 max" "double avg" "int64 min"; do
	set -- $t
	run_ok "$NG_TMP/3.log" "$EXAMPLE" --launch 3 --check --mixed --dtype "$1" --redop "$2" \
		--min-bytes 24 --max-bytes 96K --step-factor 64 --iters 1 --warmup 0
	assert_eq "$(grep -c 'check OK' "$NG_TMP/3.log")" 3 "$t: ranks checked OK"
done

note "a buffer larger than the shared-memory chunk, in many rounds"
NCCLSIM_SHM_CHUNK=64K run_ok "$NG_TMP/chunk.log" "$EXAMPLE" --launch 2 --check --mixed \
	--min-bytes 1M --max-bytes 1M --iters 1 --warmup 0
assert_eq "$(grep -c 'check OK' "$NG_TMP/chunk.log")" 2 "chunked: ranks checked OK"
echo "PASS collectives"
