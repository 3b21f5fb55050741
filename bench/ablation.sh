#!/bin/sh
# An ablation tree for bench/gpu_overhead.sh's `<variant>@.abl/NAME`: the
# tree at REV (default HEAD) with bench/ablations/NAME.patch applied (the
# shim with a line or two changed, to measure what they cost), in .abl/NAME
# (ignored by git; carry it to the GPU host with .deps and .nccl-tests).
#
#   bash bench/ablation.sh NAME [REV]
set -eu
cd "$(dirname "$0")/.."
name=${1:?usage: bench/ablation.sh NAME [REV]}
rev=${2:-HEAD}
p=bench/ablations/$name.patch
if [ ! -f "$p" ]; then
	echo "ablation.sh: no $p; there are:" $(ls bench/ablations | sed 's/\.patch$//') >&2
	exit 2
fi
rm -rf ".abl/$name"
mkdir -p ".abl/$name"
git archive "$rev" | tar -x -C ".abl/$name"
patch -s -p1 -d ".abl/$name" <"$p"
echo ".abl/$name: $rev with $p"
