#!/bin/sh
# The ELF reader of the API census against every committed input of its
# fuzz harness (fuzz/corpus/elf: seeds and past findings), built with
# gcc: each must be read without a crash or a hang, by the harness's own
# checks.  Under ASan (`make check SANITIZE=address,undefined`) this is
# the fuzzer's check.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
R="$NG_BUILD/tests/fuzz_elf_replay"
[ -x "$R" ] || fail "$R not built"
n=0
for f in "$NG_ROOT"/fuzz/corpus/elf/*; do
	timeout 60 "$R" "$f" >"$NG_TMP/out" 2>&1 || { cat "$NG_TMP/out"; fail "$f: exit $?"; }
	assert_grep ": ok" "$NG_TMP/out"
	n=$((n + 1))
done
[ $n -ge 6 ] || fail "only $n inputs in fuzz/corpus/elf"
echo "ok ($n inputs)"
