#!/bin/sh
# The shim's own cost per call, without NCCL's: bench/ab_loop against
# bench/null_nccl.c (a libnccl.so.2 whose calls return at once, or spin
# NULL_NCCL_SPIN_NS like NCCL's host path), with the CPU backend's CUDA
# runtime.  In-process A/B, so the figure is the added ns per call.
# "recording" runs under `ncclguard run` (a live LTTng session, needs
# lttng-sessiond), without GPU timing: the TSC stamp and the ring push;
# its calls spin 4 us as NCCL's host path would (back-to-back no-op calls
# fill the ring faster than the watchdog drains it, and the caller then
# writes the events itself).
#
#   bench/shim_cost.sh [REPS]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${NG_BENCH_BUILD:-$ROOT/build}
REPS=${1:-5}
export LD_LIBRARY_PATH="$B/bench/null:$B/sim" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 NCCLGUARD_LOG=quiet
BIN=$B/bench/ab_loop_null
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

added() { "$@" "$BIN" 100 20000 2>/dev/null | awk '/^direct/ {d=$4} /^shim/ {print $4 - d}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for i in $(seq "$REPS"); do
	added env >>"$TMP/aa"
	added env LD_PRELOAD="$B/lib/libncclguard.so" NCCLGUARD_TRACE=0 NCCLGUARD_TIMING=0 >>"$TMP/notiming"
	rm -rf "$TMP/trace"
	added "$B/bin/ncclguard" run -o "$TMP/trace" -- env NCCLGUARD_TIMING=0 NULL_NCCL_SPIN_NS=4000 >>"$TMP/rec"
done
printf "%-40s %s\n" "variant ($REPS processes, median)" "added ns/call"
printf "%-40s %s\n" "A/A (no shim)" "$(median <"$TMP/aa")"
printf "%-40s %s\n" "shim, no session, no GPU timing" "$(median <"$TMP/notiming")"
printf "%-40s %s\n" "shim recording, no GPU timing, 4 us calls" "$(median <"$TMP/rec")"
