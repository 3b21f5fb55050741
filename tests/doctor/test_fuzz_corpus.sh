#!/bin/sh
# The doctor-file reader against every committed input of its fuzz
# harness (fuzz/corpus/doctor: seeds and what the fuzzer kept), built
# with gcc: each must be read without a crash or a hang.  Under ASan
# (`make check SANITIZE=address,undefined`) this is the fuzzer's check.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
R="$NG_BUILD/tests/fuzz_doctor_replay"
[ -x "$R" ] || fail "$R not built"
n=0
for f in "$NG_ROOT"/fuzz/corpus/doctor/*; do
	timeout 60 "$R" "$f" >"$NG_TMP/out" 2>&1 || { cat "$NG_TMP/out"; fail "$f: exit $?"; }
	assert_grep ": ok" "$NG_TMP/out"
	n=$((n + 1))
done
[ $n -ge 4 ] || fail "only $n inputs in fuzz/corpus/doctor"
echo "ok ($n inputs)"
