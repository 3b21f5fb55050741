#!/bin/sh
# Events LTTng drops in a burst (e2e_test_burst's first job): 2 ranks on
# the CPU backend, 20,005 8-byte all-reduces each as fast as they go,
# GPU timing sampled 1 in 64, under `ncclguard run`; RUNS times, with
# BURNERS CPU burners (`yes`) beside it.  Prints each run's events lost
# (as run says them) and wall time, then the runs that lost any.  As
# root, in a mount namespace of its own with a private /var/run/lttng and
# /dev/shm, so its session daemon is its own and is stopped at the end.
#
#   bench/burst_loss.sh [RUNS [BURNERS]]     (default 10 runs, 0 burners)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
RUNS=${1:-10}
BURNERS=${2:-0}
if [ -z "${NG_BENCH_INNER:-}" ] && [ "$(id -u)" = 0 ]; then
	NG_BENCH_INNER=1 exec unshare -m sh -c 'mkdir -p /var/run/lttng &&
		mount -t tmpfs -o mode=0755 ng-lttng /var/run/lttng && mount -t tmpfs -o mode=1777 ng-shm /dev/shm &&
		exec sh "$0" "$@"' "$0" "$@"
fi
TMP=$(mktemp -d)
export LTTNG_HOME="$TMP"
burners=""
cleanup() {
	[ -z "$burners" ] || kill $burners 2>/dev/null || true
	if [ -n "${NG_BENCH_INNER:-}" ] && [ -f /var/run/lttng/lttng-sessiond.pid ]; then
		kill "$(cat /var/run/lttng/lttng-sessiond.pid)" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
i=0
while [ $i -lt "$BURNERS" ]; do
	yes >/dev/null &
	burners="$burners $!"
	i=$((i + 1))
done
export LD_LIBRARY_PATH="$B/sim" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
lossy=0
i=1
while [ $i -le "$RUNS" ]; do
	t0=$(date +%s%N)
	"$B/bin/ncclguard" run -o "$TMP/t$i" -- env NCCLGUARD_SAMPLE=64 "$B/bin/allreduce_example" \
		--launch 2 --min-bytes 8 --max-bytes 8 --iters 20000 --warmup 5 >/dev/null 2>"$TMP/err" ||
		{ cat "$TMP/err" >&2; exit 1; }
	ms=$((($(date +%s%N) - t0) / 1000000))
	lost=$(sed -n 's/^ncclguard: warning: \([0-9]*\) events lost.*/\1/p' "$TMP/err")
	[ -z "$lost" ] || lossy=$((lossy + 1))
	echo "run $i: ${lost:-0} events lost of 40,646, $ms ms"
	rm -rf "$TMP/t$i"
	i=$((i + 1))
done
echo "$lossy of $RUNS runs lost events ($BURNERS burners)"
