#!/bin/bash
# Everything shown on a GPU host, in one call (issue 7): builds the shim,
# the tracer and the CLI there, then
#   1. examples/train_ddp.py under `ncclguard run` with a policy: trace,
#      report, Chrome trace; losses identical with and without the shim;
#   2. examples/allreduce.c on real NCCL, 8 B .. 256 MiB: the analyzer's busbw
#      next to the example's own;
#   3. CUDA graph capture of NCCL collectives (examples/graph_capture.py);
#   4. a nonblocking communicator (examples/allreduce --nonblocking);
#   5. an injected stall caught by the watchdog;
#   6. overhead, interleaved: nccl-tests all_reduce_perf at 8 B and the DDP
#      step, without the shim, with it and no session, with it recording.
# Prints a short table last.  Stages: $STAGES (default all), e.g. STAGES="1 6".
set -u
cd "$(dirname "$0")/../.."
. tests/gpu/env.sh
OUT=${OUT:-/tmp/ngout}; mkdir -p "$OUT"
STAGES=${STAGES:-"1 2 3 4 5 6"}
NP=${NP:-1}
TABLE=$OUT/table.txt; : >"$TABLE"
row() { printf "%-44s %s\n" "$1" "$2" | tee -a "$TABLE"; }
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }

nvidia-smi -L
make -j16 $NG_MAKEFLAGS all >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
# The example against the wheel's NCCL and the toolkit's runtime.
make -j16 $NG_MAKEFLAGS gpu-examples >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
export LD_LIBRARY_PATH="$NCCL_LIBDIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NG=$PWD/build/bin/ncclguard
# LTTng from the carried packages: a root session daemon.
lt lttng-sessiond --daemonize --no-kernel --consumerd64-path="$LTTNG_CONSUMERD64_BIN" >/dev/null 2>&1
sleep 1
ngrun() { lt "$NG" run "$@"; }

losses() { grep '^step [0-9]' "$1" | md5sum | cut -c1-8; }
ddp() { torchrun --standalone --nproc_per_node=$NP examples/train_ddp.py "$@"; }

if want 1; then
	ddp --steps 30 >"$OUT/ddp_plain.log" 2>&1
	ngrun -o "$OUT/ddp_trace" --policy examples/policy/gpu-host.conf -- \
		torchrun --standalone --nproc_per_node=$NP examples/train_ddp.py --steps 30 >"$OUT/ddp_run.log" 2>&1
	rc=$?
	row "1 ddp under ncclguard run: exit" "$rc"
	row "1 losses plain / shim" "$(losses "$OUT/ddp_plain.log") / $(losses "$OUT/ddp_run.log")"
	lt "$NG" analyze "$OUT/ddp_trace" --json "$OUT/ddp_report.json" --chrome "$OUT/ddp_chrome.json" \
		--html "$OUT/ddp_report.html" >"$OUT/ddp_analyze.txt" 2>&1
	row "1 analyze exit" "$?"
	row "1 coll_complete events" "$(lt babeltrace2 "$OUT/ddp_trace" 2>/dev/null | grep -c coll_complete)"
	lt babeltrace2 "$OUT/ddp_trace" 2>/dev/null | grep coll_complete | head -3 >"$OUT/ddp_events.txt"
fi
cat "$TABLE"
