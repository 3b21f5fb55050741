#!/bin/bash
# First proof on a GPU host: the shim forwards PyTorch's and a C program's
# NCCL calls unchanged.  Prints a table last.
set -u
cd "$(dirname "$0")/../.."
. tests/gpu/env.sh
OUT=${OUT:-/tmp/ngout}; mkdir -p "$OUT"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
ngmake -j8 build/lib/libncclguard.so >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
nm -D --defined-only build/lib/libncclguard.so | wc -l
run_ddp() { torchrun --standalone --nproc_per_node=1 examples/train_ddp.py --steps 20 "$@" 2>&1; }
run_ddp >"$OUT/ddp_plain.log"
NCCLGUARD_LOG=debug LD_PRELOAD=$PWD/build/lib/libncclguard.so run_ddp >"$OUT/ddp_shim.log"
grep -h "^step\|ncclguard" "$OUT/ddp_shim.log" | head -20
a=$(grep '^step [0-9]' "$OUT/ddp_plain.log" | md5sum); b=$(grep '^step [0-9]' "$OUT/ddp_shim.log" | md5sum)
echo "losses plain vs shim: $( [ "$a" = "$b" ] && echo IDENTICAL || echo DIFFER )"
grep '^step 19' "$OUT/ddp_plain.log" "$OUT/ddp_shim.log"
