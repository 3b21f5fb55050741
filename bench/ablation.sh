#!/bin/sh
# An ablation tree for bench/gpu_overhead.sh's `<variant>@.abl/NAME`: the
# shim with a line or two changed (bench/ablations/NAME.patch), to measure
# what they cost.  Each patch names the commit it applies to on its
# second line ("base: SHA"); the tree is that commit (or REV) with the
# patch applied, in .abl/NAME (ignored by git; carry it to the GPU host
# with .deps and .nccl-tests).
#
#   bash bench/ablation.sh NAME [REV]
#   bash bench/ablation.sh --check      every patch against its base (make bench-check)
set -eu
cd "$(dirname "$0")/.."
base_of() { sed -n '2s/^base: *//p' "$1"; }

if [ "${1:-}" = --check ]; then
	idx=$(mktemp) && trap 'rm -f "$idx"' EXIT
	rc=0
	for p in bench/ablations/*.patch; do
		b=$(base_of "$p")
		if [ -z "$b" ]; then
			echo "$p: no 'base: SHA' on its second line"; rc=1; continue
		fi
		if ! git cat-file -e "$b^{commit}" 2>/dev/null; then
			echo "$p: base $b is not in this clone's history"; rc=1; continue
		fi
		if GIT_INDEX_FILE=$idx git read-tree "$b" &&
		   GIT_INDEX_FILE=$idx git apply --cached --check "$p"; then
			echo "$p: applies to $(git log -1 --format=%h "$b")"
		else
			echo "$p: does not apply to its base $b"; rc=1
		fi
	done
	exit $rc
fi

name=${1:?usage: bench/ablation.sh NAME [REV] | --check}
p=bench/ablations/$name.patch
if [ ! -f "$p" ]; then
	echo "ablation.sh: no $p; there are:" $(ls bench/ablations | sed 's/\.patch$//') >&2
	exit 2
fi
rev=${2:-$(base_of "$p")}
rm -rf ".abl/$name"
mkdir -p ".abl/$name"
git archive "$rev" | tar -x -C ".abl/$name"
patch -s -p1 -d ".abl/$name" <"$p"
echo ".abl/$name: $rev with $p"
