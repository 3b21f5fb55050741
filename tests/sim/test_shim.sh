#!/bin/sh
# The unmodified shim on the CPU backend: the example runs, checked, with
# libncclguard.so preloaded, and the shim finds sim's NCCL and CUDA.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

[ -f "$NG_LIB" ] || { echo "SKIP: $NG_LIB not built"; exit 0; }
LD_PRELOAD="$NG_PRELOAD" run_ok "$NG_TMP/shim.log" "$EXAMPLE" --launch 2 --check --mixed \
	--group --max-bytes 64K --step-factor 64 --iters 2 --warmup 1
assert_eq "$(grep -c 'check OK' "$NG_TMP/shim.log")" 2 "ranks checked OK under the shim"
echo "PASS shim"
