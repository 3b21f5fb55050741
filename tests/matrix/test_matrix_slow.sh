#!/bin/sh
# `ncclguard matrix --local 6` on the CPU backend, rank 2 slowed by an
# injected delay on each of its all-reduces (NCCLGUARD_INJECT under the
# preloaded shim): every pair with rank 2 is slow, no other, and rank 2
# is named; matrix.json and matrix.html are written, the exit status is 0.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/matrix/common.sh"

cd "$NG_TMP" || fail "no $NG_TMP"
rc=0
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=quiet NCCLGUARD_INJECT="delay:ms=200,rank=2,op=allreduce" \
	timeout -k 5 120 "$NG_BIN" matrix --local 6 $SMALL --timeout 10 >out 2>err || rc=$?
cat out err
assert_eq "$rc" 0 "exit status"
assert_grep "^ncclguard matrix: 6 ranks, 15 pairs in 5 rounds" out
assert_grep "^common to the slow pairs: rank 2 (host " out
assert_grep "^15 pairs: 15 measured, 0 failed, 5 slow$" out
[ -f ncclguard-matrix/matrix.json ] && [ -f ncclguard-matrix/matrix.html ] ||
	fail "the default folder ncclguard-matrix/ has not both files"
check_json ncclguard-matrix/matrix.json 6 >got || exit 1
cat got
printf 'slow 0-2\nslow 1-2\nslow 2-3\nslow 2-4\nslow 2-5\nsuspect 2\n' >want
diff want got || fail "slow pairs or suspects differ"
# Each rank on its own simulated GPU: GPU = local rank.
python3 -c '
import json, sys
m = json.load(open("ncclguard-matrix/matrix.json"))
ids = [r["gpu_pci_bus_id"] for r in m["ranks"]]
assert ids == ["0000:%02X:00.0" % (0x10 + r) for r in range(6)], ids
' || fail "bus ids are not one GPU per local rank"
assert_grep "<h2>Bus bandwidth, GB/s</h2>" ncclguard-matrix/matrix.html
assert_no_grep "<script\|src=\|href=" ncclguard-matrix/matrix.html

echo ok
