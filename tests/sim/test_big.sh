#!/bin/sh
# 256 MiB all-reduce, checked, through a bounded shared-memory segment.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

run_ok "$NG_TMP/big.log" "$SIMTEST" big 268435456 2
assert_grep "OK big allreduce of 268435456 bytes" "$NG_TMP/big.log"
echo "PASS big"
