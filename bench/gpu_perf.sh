#!/bin/bash
# Where the shim's time goes on a GPU host: bench/ab_loop.c (blocks through
# the shim alternating with direct ones, 8-byte all-reduces) under
# `perf record -e cpu-clock`, three processes: no shim (aa), the shim with
# no provider (shim), and recording under `ncclguard run` (rec).  Writes to
# $OUT: dso.txt (shares by library and by thread; the watchdog is
# ncclguard-wd), sym.tgz (by symbol, the calling threads only) and
# annotate-*.txt (the shim's hot functions, instruction by instruction).
#
#   PERF_DIR=DIR bash bench/gpu_perf.sh
#
# DIR holds a perf binary (bin-perf) and the libraries it lacks on the host
# (lib/); on a host without perf, carry Debian 12's: `cp $(readlink -f
# /usr/bin/perf) DIR/bin-perf` and the ldd-listed libraries that the host
# does not have (libperl, libpython3.11, libbabeltrace, libopencsd, libslang,
# ...) into DIR/lib.  A VM may expose no hardware counters: cpu-clock then.
# Without PERF_DIR, the host's perf is used.
set -u
cd "$(dirname "$0")/.." || exit 1
NG_ROOT=$PWD . tests/gpu/env.sh
W=/tmp/ngperf; rm -rf "$W"; mkdir -p "$W"
O=${OUT:-$W}
BLOCKS=${BLOCKS:-400}
ngmake -j16 build/lib/libncclguard.so build/lib/libncclguard-tp.so build/bin/ncclguard \
	>"$W/build.log" 2>&1 || { tail "$W/build.log"; exit 1; }
export LD_LIBRARY_PATH="$NCCL_LIBDIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gcc -O2 -g -o "$W/ab_loop" bench/ab_loop.c -I"$NCCL_HOME/include" -I"$CUDA_HOME/include" \
	-L"$NCCL_LIBDIR" -L"$CUDA_HOME/lib64" -l:libnccl.so.2 -lcudart -ldl || exit 1
if [ -n "${PERF_DIR:-}" ]; then
	PERF_BIN=$(cd "$PERF_DIR" && pwd)/bin-perf
	PERF_LIB=$(cd "$PERF_DIR" && pwd)/lib
else
	PERF_BIN=$(command -v perf) || { echo "no perf: set PERF_DIR" >&2; exit 1; }
	PERF_LIB=
fi
# The carried libraries last, so that the program keeps the host's own.
PERF() { LD_LIBRARY_PATH="$LD_LIBRARY_PATH${PERF_LIB:+:$PERF_LIB}" "$PERF_BIN" "$@"; }
SHIM=$PWD/build/lib/libncclguard.so
export RANK=0 WORLD_SIZE=1 LOCAL_RANK=0
lt lttng-sessiond --daemonize --no-kernel --consumerd64-path="$LTTNG_CONSUMERD64_BIN" >/dev/null 2>&1
REC="record -F 20000 -e cpu-clock"
for v in aa shim rec; do
	case $v in
	aa) PERF $REC -o "$W/$v.data" -- "$W/ab_loop" "$BLOCKS" 2000 8 ;;
	shim) PERF $REC -o "$W/$v.data" -- env LD_PRELOAD="$SHIM" NCCLGUARD_TRACE=0 \
		"$W/ab_loop" "$BLOCKS" 2000 8 ;;
	# ncclguard run preloads the shim into perf too: harmless, perf calls no NCCL.
	rec) build/bin/ncclguard run -o "$W/trace" -- env \
		LD_LIBRARY_PATH="$LD_LIBRARY_PATH${PERF_LIB:+:$PERF_LIB}" "$PERF_BIN" $REC \
		-o "$W/$v.data" -- env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$W/ab_loop" "$BLOCKS" 2000 8 ;;
	esac >>"$O/log.txt" 2>&1
	{ echo "=== $v"
	  PERF report -i "$W/$v.data" --no-children --sort dso --stdio 2>&1 | grep -v '^#' | grep -v '^$' | head -20
	  PERF report -i "$W/$v.data" --no-children --sort comm --stdio 2>&1 | grep -v '^#' | grep -v '^$' | head -12
	} >>"$O/dso.txt"
	PERF report -i "$W/$v.data" --no-children --sort dso,sym --percent-limit 0.05 --stdio \
		--comm ab_loop 2>&1 | grep -v '^#' | grep -v '^$' >"$W/sym-$v.txt"
done
tar -C "$W" -czf "$O/sym.tgz" sym-aa.txt sym-shim.txt sym-rec.txt
for v in shim rec; do
	for s in ncclAllReduce ng_now_coarse_ns ng_trace_enqueue ng_clock_from_ticks; do
		echo "=== $s"
		PERF annotate -i "$W/$v.data" --stdio --dsos libncclguard.so "$s" 2>/dev/null |
			grep -v '^\s*0.00 :' | head -300
	done >"$O/annotate-$v.txt"
done
grep -h -A12 '=== ' "$O/dso.txt" | grep -E '===|libncclguard|lttng|ncclguard-wd'
