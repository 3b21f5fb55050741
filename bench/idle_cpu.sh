#!/bin/sh
# CPU use of the shim while a job idles (issue 5: at most 0.5% of a core):
# one rank on the CPU backend initialises a communicator, runs 3
# all-reduces, then sleeps; we read its CPU time over 10 s of that sleep,
# with and without the shim.  bench/idle_cpu.sh [SECONDS]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
S=${1:-10}
export LD_LIBRARY_PATH=$B/sim NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() {
	"$@" "$B/tests/preload/job" "$TMP/id.$$" 3 --sleep $((S + 4)) >"$TMP/out" 2>&1 &
	pid=$!
	while ! grep -q idle "$TMP/out" 2>/dev/null; do sleep 0.1; done
	sleep 2
	t0=$(ticks $pid); sleep "$S"; t1=$(ticks $pid)
	wait $pid
	rm -f "$TMP/id.$$"
	awk "BEGIN { printf \"%.3f\", ($t1 - $t0) * 100 / $(getconf CLK_TCK) / $S }"
}
printf "CPU while idle, %% of one core over %s s: no shim %s, shim %s, shim recording %s\n" "$S" \
	"$(measure env)" "$(measure env LD_PRELOAD="$B/lib/libncclguard.so" NCCLGUARD_TRACE=0)" \
	"$(measure "$B/bin/ncclguard" run -o "$TMP/trace" --)"
