#!/bin/sh
# Instructions and code lines of one steady-state 8-byte ncclAllReduce
# through the shim, counted by single-stepping bench/ab_loop_null under gdb
# (CPU backend, no-op NCCL): without a session (the provider loaded) and
# recording under `ncclguard run`.  Calls are count-sampled 1 in 10^6: under
# gdb every call would pass the rate sampler.  A count, not a time: it
# tells what a change adds to the path, with this compiler; another
# compiler lays the path out differently (a change that took 12
# instructions off here once made the shim slower on a GPU host built
# with gcc 13: bench/RESULTS.md).
#
#   bench/insn_count.sh [ROOT]     ROOT: a built tree (default: this one;
#                                  NG_BENCH_BUILD: its build folder)
#
# With LINES=1, the last recorded call's instructions by source line.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "${1:-$HERE/..}" && pwd)
B=${NG_BENCH_BUILD:-$ROOT/build}
command -v gdb >/dev/null || { echo "insn_count: needs gdb" >&2; exit 1; }
for f in lib/libncclguard.so lib/libncclguard-tp.so bin/ncclguard bench/ab_loop_null; do
	[ -e "$B/$f" ] || { echo "insn_count: $B/$f missing (make all $B/bench/ab_loop_null)" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$B/bench/null:$B/sim" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 NCCLGUARD_LOG=quiet
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
GDB="gdb -batch -x $HERE/insn_count.py --args env NCCLGUARD_SAMPLE=1000000"
run() {
	label=$1
	shift
	SKIP=1500 REPS=3 PCS=$TMP/pcs "$@" "$B/bench/ab_loop_null" 4 1000 2>&1 |
		sed -n "s/^insn_count/$label/p"
}
run nosession env LD_PRELOAD="$B/lib/libncclguard.so" $GDB
run recording "$B/bin/ncclguard" run -o "$TMP/trace" -- $GDB
if [ "${LINES:-0}" = 1 ]; then
	addr2line -e "$B/lib/libncclguard.so" $(cat "$TMP/pcs") | sed 's|.*/||; s/ (discriminator.*//' |
		awk '{n[$1]++; if (!(($1) in o)) o[$1] = NR} END {for (k in n) print o[k], n[k], k}' |
		sort -n | cut -d' ' -f2-
fi
