#!/bin/sh
# The hardware sampler's own work per sample, with fake devices: 8 GPUs of
# 18 NVLinks each and 8 InfiniBand ports plus an Ethernet NIC (sysfs under
# NCCLGUARD_SYSROOT, the fake NVML, whose own reads are left out).  One
# rank on the CPU backend idles with the shim while its sampler runs every
# INTERVAL seconds; the sampler thread's CPU time (schedstat, ns) over
# SECONDS, divided by the samples taken, is one sample's cost, and at the
# default interval (1 s) its share of a core.  NVML's own time per call on
# a GPU host is bench/nvml_cost.c's; docs/hardware.md adds the two.
#   bench/hw_sampler.sh [SECONDS [INTERVAL]]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
S=${1:-10}
I=${2:-0.1}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/tests/e2e/hwhost.sh"
hw_fake_host "$TMP/root" ${HW_GPUS:-8} ${HW_LINKS:-18}
export LD_LIBRARY_PATH=$B/sim NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0
export NCCLGUARD_SYSROOT="$TMP/root" NCCLGUARD_NVML_LIBRARY="$B/tests/doctor/libnvidia-ml.so.1"
export NG_FAKE_NVML_STATIC=1 NCCLGUARD_HEALTH_INTERVAL="$I" LTTNG_UST_REGISTER_TIMEOUT=0
export NCCLGUARD_JOB="hwbench-$$"
LD_PRELOAD="$B/lib/libncclguard.so" "$B/tests/preload/job" "$TMP/id" 3 --sleep $((S + 4)) \
	>"$TMP/out" 2>&1 &
pid=$!
while ! grep -q idle "$TMP/out" 2>/dev/null; do sleep 0.1; done
sleep 1
tid=
for t in /proc/$pid/task/*; do
	[ "$(cat "$t/comm")" = ncclguard-hw ] && tid=${t##*/}
done
[ -n "$tid" ] || { echo "no sampler thread in $pid" >&2; kill $pid; exit 1; }
read -r c0 _ _ <"/proc/$pid/task/$tid/schedstat"
t0=$(date +%s.%N)
sleep "$S"
read -r c1 _ _ <"/proc/$pid/task/$tid/schedstat"
t1=$(date +%s.%N)
wait $pid
awk -v c="$((c1 - c0))" -v t0="$t0" -v t1="$t1" -v i="$I" 'BEGIN {
	n = (t1 - t0) / i; us = c / n / 1000
	printf "sampler, 8 GPUs x 18 NVLinks + 9 NICs: %.0f samples, %.1f us each (own work, fake NVML); at 1 s: %.4f%% of a core\n", n, us, us / 1e4
}'
