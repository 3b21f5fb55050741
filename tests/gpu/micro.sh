#!/bin/bash
# Micro-measurements on a GPU host that explain the overhead figures: the
# cost of a clock read there, and the host cost per intercepted call on
# real NCCL (bench/host_overhead.c) for each shim configuration.
set -u
cd "$(dirname "$0")/../.."
. tests/gpu/env.sh
ngmake -j16 build/lib/libncclguard.so build/lib/libncclguard-tp.so build/bin/ncclguard >/tmp/micro-build.log 2>&1 ||
	{ tail -20 /tmp/micro-build.log; exit 1; }
GCC_NCCL="-O2 -I$NCCL_HOME/include -I$CUDA_HOME/include -L$NCCL_LIBDIR -L$CUDA_HOME/lib64 -l:libnccl.so.2 -lcudart"
mkdir -p build/gpu
gcc -O2 -o build/gpu/clock_cost bench/clock_cost.c && gcc -o build/gpu/host_overhead bench/host_overhead.c $GCC_NCCL || exit 1
export LD_LIBRARY_PATH="$NCCL_LIBDIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
build/gpu/clock_cost
lt lttng-sessiond --daemonize --no-kernel --consumerd64-path="$LTTNG_CONSUMERD64_BIN" >/dev/null 2>&1; sleep 1
SHIM=$PWD/build/lib/libncclguard.so NG=$PWD/build/bin/ncclguard
export RANK=0 WORLD_SIZE=1 LOCAL_RANK=0
ho() { "$@" build/gpu/host_overhead ${CALLS:-100000} 500 8 2>/dev/null | awk '/ns_per_call/ {print $2}'; }
for i in 1 2 3; do
	printf "round %d: plain %s | shim notiming %s | shim %s | shim sample64 %s | rec %s | rec sample64 %s | rec notiming %s\n" $i \
		"$(ho env)" "$(ho env LD_PRELOAD=$SHIM NCCLGUARD_TRACE=0 NCCLGUARD_TIMING=0)" \
		"$(ho env LD_PRELOAD=$SHIM NCCLGUARD_TRACE=0)" "$(ho env LD_PRELOAD=$SHIM NCCLGUARD_TRACE=0 NCCLGUARD_SAMPLE=64)" \
		"$(ho $NG run -o /tmp/mr$i -- env)" "$(ho $NG run -o /tmp/ms$i -- env NCCLGUARD_SAMPLE=64)" \
		"$(ho $NG run -o /tmp/mt$i -- env NCCLGUARD_TIMING=0)"
done
