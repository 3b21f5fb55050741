#!/bin/sh
# Output verification's cost per call on the host, without NCCL's:
# bench/ab_loop against bench/null_nccl.c (calls return at once) with the
# CPU backend's CUDA runtime, in-process A/B (blocks through the shim
# alternate with blocks straight to NCCL), so each figure is the shim's
# added ns per call; processes of the variants interleaved.
#   - calls not sampled: no session, NCCLGUARD_VERIFY 0 against the
#     default (1024): the mask's branch, and one call in 1024 turned away
#     in the cold path for want of a session;
#   - a sampled call: under `ncclguard run` (a session; GPU timing on, as
#     verification needs its markers), NCCLGUARD_VERIFY=16 against 0, the
#     difference times 16: the cold path, the copies and the marker on
#     the stream.  Calls spin 4 us as NCCL's host path would; one in 16
#     keeps within what the watchdog hashes (every call would run the
#     slots out and measure the drops).  On the CPU backend a copy is a
#     hand-off to its stream's thread.
#
#   bench/verify_cost.sh [REPS] [BYTES]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${NG_BENCH_BUILD:-$ROOT/build}
REPS=${1:-5}
BYTES=${2:-1048576}
export LD_LIBRARY_PATH="$B/bench/null:$B/sim" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 NCCLGUARD_LOG=quiet
export NCCLGUARD_HEALTH_INTERVAL=0
BIN=$B/bench/ab_loop_null
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

added() { "$@" "$BIN" 100 5000 "$BYTES" 2>/dev/null | awk '/^direct/ {d=$4} /^shim/ {print $4 - d}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
rec() {
	rm -rf "$TMP/trace"
	added "$B/bin/ncclguard" run -o "$TMP/trace" -- env NCCLGUARD_VERIFY="$1" \
		NULL_NCCL_SPIN_NS=4000 >>"$TMP/rec$1"
	n=$(babeltrace2 "$TMP/trace" 2>/dev/null | grep -c "ncclguard:fingerprint:" || true)
	echo "$n" >>"$TMP/fps$1"
}
for i in $(seq "$REPS"); do
	added env LD_PRELOAD="$B/lib/libncclguard.so" NCCLGUARD_TRACE=0 NCCLGUARD_VERIFY=0 >>"$TMP/off"
	added env LD_PRELOAD="$B/lib/libncclguard.so" NCCLGUARD_TRACE=0 >>"$TMP/default"
	rec 0
	rec 16
done
printf "%-52s %s\n" "variant ($REPS processes each, interleaved; median)" "added ns/call"
printf "%-52s %s\n" "no session, verification off" "$(median <"$TMP/off")"
printf "%-52s %s\n" "no session, default (every 1024th)" "$(median <"$TMP/default")"
printf "%-52s %s\n" "recording, verification off" "$(median <"$TMP/rec0")"
printf "%-52s %s\n" "recording, one call in 16 verified ($BYTES B output)" "$(median <"$TMP/rec16")"
printf "%-52s %s\n" "  so a sampled call" \
	"$(echo "$(median <"$TMP/rec16") $(median <"$TMP/rec0")" | awk '{print ($1 - $2) * 16}')"
printf "%-52s %s\n" "  fingerprints per process (of 1,000,000 calls / 16)" "$(median <"$TMP/fps16")"
