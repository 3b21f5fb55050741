#!/bin/bash
# Builds NCCL from a source tarball for this host's GPU only, with only the
# kernels the GPU stages run, so that it fits one device command:
#   bash tests/gpu/nccl_build.sh .nccl-src/nccl-2.30.7.tar.gz [DEST]
# The tarball is `git archive vX-1 src makefiles Makefile LICENSE.txt` of
# NVIDIA/nccl.  DEST (default .nccl-src/build-VERSION) gets include/ and
# lib/; the build's time is printed.  ONLY_FUNCS keeps float all-reduce
# sums, all-gather, broadcast and send/receive (NCCL's src/device/
# generate.py); anything else fails at launch with NCCL's own error.
set -eu
TAR=$1
V=$(basename "$TAR" .tar.gz); V=${V#nccl-}
DEST=${2:-$(dirname "$TAR")/build-$V}
SRC=$(dirname "$TAR")/src-$V
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
if [ ! -f "$DEST/lib/libnccl.so" ]; then
	mkdir -p "$SRC"
	[ -f "$SRC/Makefile" ] || tar -xzf "$TAR" -C "$SRC"
	start=$(date +%s)
	make -C "$SRC" -j"$(nproc)" src.build CUDA_HOME="$CUDA_HOME" BUILDDIR="$(realpath -m "$DEST")" \
		NVCC_GENCODE="-gencode=arch=compute_$CC,code=sm_$CC" \
		ONLY_FUNCS="AllReduce Sum f32 * *|AllGather * *|Broadcast * *|SendRecv" >"$DEST.log" 2>&1 ||
		{ tail -n 40 "$DEST.log"; exit 1; }
	echo "nccl_build: NCCL $V for sm_$CC on $(nproc) cores in $(( $(date +%s) - start )) s"
fi
ls -la "$DEST/lib"
