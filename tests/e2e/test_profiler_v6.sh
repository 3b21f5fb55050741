#!/bin/sh
# NCCL 2.29's profiler plugin ABI (ncclProfiler_v6) and its copy-engine
# collectives.  The CPU backend loads the plugin as the NCCL version it
# plays would (NCCLSIM_VERSION: v6 from 2.29, v5 for 2.28, v4 for 2.27;
# NCCL_DEBUG=INFO says which) and, with NCCLSIM_CE_COLL=1, runs its
# all-gathers on the copy engine: a CeColl event, no Coll, no kernel
# channels.  Such calls are counted, end without a false hang, are shown
# as copy engine (CE), untimed on the GPU where only the plugin sees them
# and timed by the wrapper where it sees them.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCL_DEBUG=INFO
XLA="$NG_BUILD/tests/preload/xla_like"
EX="$NG_BUILD/bin/allreduce_example"
[ -x "$XLA" ] || fail "$XLA not built"

# ranks TAG N ITERS: N ranks of xla_like (an all-reduce and an all-gather
# per step) without LD_PRELOAD, under run.
ranks() {
	tag=$1 n=$2 iters=$3
	"$NG_BIN" run -o "$NG_TMP/$tag" --timeout 1 --on-timeout exit -- sh -c '
		n=$1 xla=$2 id=$3 iters=$4
		r=0; while [ $r -lt "$n" ]; do
			RANK=$r WORLD_SIZE=$n XLA_ALLGATHER=1 env -u LD_PRELOAD "$xla" "$id" "$iters" 4096 &
			r=$((r + 1))
		done; wait' sh "$n" "$XLA" "$NG_TMP/$tag.id" "$iters" >"$NG_TMP/$tag.out" 2>"$NG_TMP/$tag.err"
}
field() {	# field JSON PYEXPR: a value of report.json
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
ROWS='sorted((c["op"], c["calls"], c["timed"], c["algo"], c.get("algo_label"), c["proto"], c["nchannels"]) for c in r["collectives"])'

note "the plugin ABIs are exported: profiler v6 beside v5, v4, v3; env v2 beside v1"
for s in ncclProfiler_v6 ncclProfiler_v5 ncclProfiler_v4 ncclProfiler_v3 ncclEnvPlugin_v2 ncclEnvPlugin_v1; do
	nm -D --defined-only "$NG_LIB" | grep -q " $s\$" || fail "no $s"
done

note "plugin only, NCCL 2.30, all-gathers on the copy engine: v6, counted, no false hang"
NCCLSIM_VERSION=23007 NCCLSIM_CE_COLL=1 ranks ce 3 4 || { cat "$NG_TMP/ce.err"; fail "run failed"; }
assert_eq "$(grep -c 'PROFILER/Plugin: Loaded ncclguard (v6)$' "$NG_TMP/ce.err")" 3 "v6 loaded by each rank"
assert_eq "$(grep -c '4 calls done' "$NG_TMP/ce.out")" 3 "ranks done"
ng_trace_text "$NG_TMP/ce" "$NG_TMP/ce.txt"
assert_eq "$(grep -c 'ncclguard:coll_enqueue: .*op = "allgather"' "$NG_TMP/ce.txt")" 12 "all-gathers enqueued"
# Ended at NCCL's stop, with no GPU time: untimed, not the host's enqueue.
assert_eq "$(grep -c 'ncclguard:coll_complete: .*op = "allgather"' "$NG_TMP/ce.txt")" 12 "all-gathers complete"
assert_eq "$(grep 'ncclguard:coll_complete: .*op = "allgather"' "$NG_TMP/ce.txt" | grep -vc 'gpu_start_ns = 0, gpu_end_ns = 0,')" 0 "no GPU time"
assert_eq "$(grep -c 'ncclguard:coll_algo: .*algo = "CE", proto = "-", .*plugin_only = 1' "$NG_TMP/ce.txt")" 3 "coll_algo CE"
J="$NG_TMP/ce/report.json"
assert_eq "$(field "$J" "$ROWS")" \
	"[('allgather', 4, 0, 'CE', 'copy engine (CE)', None, 0), ('allreduce', 4, 4, 'RING', None, 'LL', 1)]" "collectives rows"
assert_eq "$(field "$J" 'len(r["hangs"]) + len(r["algo_mismatches"]) + len(r["incomplete"])')" 0 "no hang, nothing incomplete"
assert_grep "allgather .* copy engine (CE)/-/0" "$NG_TMP/ce.out"
assert_grep "<small>(copy engine (CE))</small>" "$NG_TMP/ce/report.html"

note "plugin only, NCCL 2.30 calling v5: the plugin hears nothing of copy-engine calls"
NCCLSIM_VERSION=23007 NCCLSIM_CE_COLL=1 NCCLSIM_PROFILER_VERSION=5 ranks ce5 2 3 ||
	{ cat "$NG_TMP/ce5.err"; fail "run failed"; }
assert_eq "$(grep -c 'PROFILER/Plugin: Loaded ncclguard (v5)$' "$NG_TMP/ce5.err")" 2 "v5 forced"
assert_eq "$(field "$NG_TMP/ce5/report.json" "$ROWS")" \
	"[('allreduce', 3, 3, 'RING', None, 'LL', 1)]" "only the kernels' calls"
assert_eq "$(field "$NG_TMP/ce5/report.json" 'len(r["hangs"])')" 0 "v5 hangs"

note "NCCL 2.28: v5, the all-gathers on kernels; the copy engine knob refused aloud"
NCCLSIM_VERSION=22809 NCCLSIM_CE_COLL=1 ranks v5 2 3 || { cat "$NG_TMP/v5.err"; fail "run failed"; }
assert_eq "$(grep -c 'PROFILER/Plugin: Loaded ncclguard (v5)$' "$NG_TMP/v5.err")" 2 "v5 loaded"
assert_grep "NCCLSIM_CE_COLL=1 needs NCCLSIM_VERSION 22900 or later" "$NG_TMP/v5.err"
assert_eq "$(field "$NG_TMP/v5/report.json" "$ROWS")" \
	"[('allgather', 3, 3, 'RING', None, 'LL', 1), ('allreduce', 3, 3, 'RING', None, 'LL', 1)]" "v5 rows"

note "NCCL 2.27: v4"
NCCLSIM_VERSION=22703 ranks v4 2 3 || { cat "$NG_TMP/v4.err"; fail "run failed"; }
assert_eq "$(grep -c 'PROFILER/Plugin: Loaded ncclguard (v4)$' "$NG_TMP/v4.err")" 2 "v4 loaded"
assert_eq "$(field "$NG_TMP/v4/report.json" "$ROWS")" \
	"[('allgather', 3, 3, 'RING', None, 'LL', 1), ('allreduce', 3, 3, 'RING', None, 'LL', 1)]" "v4 rows"

note "preload and plugin, NCCL 2.30: the wrapper times each copy-engine call, NCCL's choice says CE"
# NCCLGUARD_SAMPLE=1: every call GPU-timed, whatever the machine's pace.
NCCLSIM_VERSION=23007 NCCLSIM_CE_COLL=1 NCCLGUARD_SAMPLE=1 "$NG_BIN" run -o "$NG_TMP/both" -- \
	"$EX" --launch 2 --op allgather \
	--iters 3 --warmup 0 --min-bytes 4K --max-bytes 16K >"$NG_TMP/both.out" 2>"$NG_TMP/both.err" ||
	{ cat "$NG_TMP/both.err"; fail "run failed"; }
assert_eq "$(grep -c 'PROFILER/Plugin: Loaded ncclguard (v6)$' "$NG_TMP/both.err")" 2 "v6 loaded"
assert_no_grep "seen only through" "$NG_TMP/both.err"
ng_trace_text "$NG_TMP/both" "$NG_TMP/both.txt"
enq=$(grep -c 'ncclguard:coll_enqueue:' "$NG_TMP/both.txt")
J="$NG_TMP/both/report.json"
assert_eq "$(field "$J" 'sum(c["calls"] for c in r["collectives"]) * 2')" "$enq" "calls counted once"
assert_eq "$(field "$J" 'sorted(set((c["op"], c["algo"], c["algo_label"], c["proto"], c["calls"] == c["timed"], c["busbw_gbps"] > 0) for c in r["collectives"]))')" \
	"[('allgather', 'CE', 'copy engine (CE)', None, True, True)]" "timed, shown as copy engine, with busbw"
assert_eq "$(grep -c 'allgather .* copy engine (CE)/-/0' "$NG_TMP/both.out")" 3 "one text row per size"
echo "PASS profiler_v6"
