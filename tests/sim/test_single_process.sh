#!/bin/sh
# Several ranks in one process (ncclCommInitAll, grouped calls and a
# grouped split from one thread) and a non-blocking init.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

run_ok "$NG_TMP/all4.log" "$SIMTEST" initall 4
assert_grep "OK initall 4" "$NG_TMP/all4.log"
run_ok "$NG_TMP/all3.log" "$SIMTEST" initall 3
assert_grep "OK initall 3" "$NG_TMP/all3.log"
run_ok "$NG_TMP/nb.log" "$SIMTEST" nonblocking
assert_grep "OK nonblocking init" "$NG_TMP/nb.log"
echo "PASS single_process"
