#!/bin/sh
# Host cost per intercepted NCCL call on the CPU backend with its cost model
# at 0 (issue 3): the same loop without the shim, with the shim and no
# session, and with the shim recording into an LTTng session; interleaved,
# REPS rounds, median ns/call of each and the added ns/call.  The "no GPU
# timing" rows leave out the two event records per call, which on the CPU
# backend are thread hand-offs to its stream worker, not the shim's cost.
#
#   bench/host_overhead.sh [REPS] [CALLS]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
REPS=${1:-5}
CALLS=${2:-200000}
BIN=$B/bench/host_overhead
export LD_LIBRARY_PATH=$B/sim NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
export RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 NCCLGUARD_LOG=quiet
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

run() { "$@" "$BIN" "$CALLS" | awk '/ns_per_call/ {print $2}'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq "$REPS"); do
	run env >>"$TMP/plain"
	run env LD_PRELOAD="$B/lib/libncclguard.so" NCCLGUARD_TRACE=0 >>"$TMP/shim"
	run env LD_PRELOAD="$B/lib/libncclguard.so" NCCLGUARD_SAMPLE=16 NCCLGUARD_TRACE=0 >>"$TMP/shim_sampled"
	run env LD_PRELOAD="$B/lib/libncclguard.so" NCCLGUARD_TIMING=0 NCCLGUARD_TRACE=0 >>"$TMP/shim_notiming"
	"$B/bin/ncclguard" run -o "$TMP/tracent$i" -- env NCCLGUARD_TIMING=0 "$BIN" "$CALLS" 2>/dev/null |
		awk '/ns_per_call/ {print $2}' >>"$TMP/rec_notiming"
	"$B/bin/ncclguard" run -o "$TMP/trace$i" -- "$BIN" "$CALLS" 2>/dev/null |
		awk '/ns_per_call/ {print $2}' >>"$TMP/rec"
done
p=$(median <"$TMP/plain"); s=$(median <"$TMP/shim"); ss=$(median <"$TMP/shim_sampled"); r=$(median <"$TMP/rec")
sn=$(median <"$TMP/shim_notiming"); rn=$(median <"$TMP/rec_notiming")
printf "%-34s %10s %12s %8s\n" "variant ($REPS rounds, $CALLS calls)" "ns/call" "added ns" "ratio"
printf "%-34s %10.1f %12s %8s\n" "no shim" "$p" "-" "1.00"
for v in "shim, no session:$s" "shim, sampled 1/16, no session:$ss" "shim, no GPU timing:$sn" \
	"shim, recording:$r" "shim, recording, no GPU timing:$rn"; do
	name=${v%:*}; val=${v##*:}
	printf "%-34s %10.1f %12.1f %8.2f\n" "$name" "$val" "$(awk "BEGIN{print $val - $p}")" "$(awk "BEGIN{print $val / $p}")"
done
