#!/bin/bash
# Everything shown on a GPU host, in one or two calls (issue 7).  Builds the
# shim, tracer and CLI there, then stages:
#   1  train_ddp.py under `ncclguard run` with a policy: trace, report, Chrome
#      trace; losses identical with and without the shim
#   2  examples/allreduce.c on real NCCL, 8 B .. 256 MiB: analyzer vs example
#   3  CUDA graph capture of NCCL collectives (examples/graph_capture.py)
#   4  a nonblocking communicator (tests/preload/job.c --nonblocking)
#   5  an injected stall in train_ddp.py caught by the watchdog (exit 4)
#   6  overhead of an 8-byte all-reduce loop, in-process A/B (bench/ab_loop.c)
#   7  overhead on the DDP step time, processes interleaved
#   8  (NP>=2) an injected delay on rank 1: the report names it the straggler
#   9  (NP>=2) an injected drop on rank 1: the others exit 4, rank 1 missing
#  10  (NP>=2) a policy pinning local ranks to GPUs in reverse order
#  11  a hung init: rank 0 of a 2-rank comm starts, rank 1 never does; the
#      watchdog's init timeout, and the report names rank 1
#  12  NCCL's configuration file (NCCL_CONF_FILE)
#  13  trust: two jobs at once, each trace its own; a rank killed with
#      SIGKILL keeps its last calls (flight ring); `ncclguard run` killed
#      with SIGKILL: its rank is gone and no session is left
#  14  findings: a stalled rank's hang, state and dump, --fail-on hang; the
#      Chrome trace's GPU slices against their enqueue
#  15  `ncclguard matrix` on real NCCL: one rank refused (a usage error,
#      nothing written); NP>=2: every pair of NP
#      ranks (--local and torchrun --no-python), or with ranks sharing GPUs
#      as hosts, under torchrun; one GPU and NP=1: two ranks on it, which
#      NCCL refuses, a failed pair and no hang
#  16  the live path: `ncclguard relay` on this machine, the DDP example
#      under `ncclguard run --relay`, `ncclguard watch --json` attached
#      first (tests/gpu/live16.sh): its collectives seen live, 0 lost in
#      analyze; one rank stalled (one GPU: its watchdog's timeout, no peer
#      to wait); an init rank 1 never joins: watch's hang line, exit 5
#  17  NCCL's profiler plugin: nccl-tests and the DDP example recorded
#      through the plugin only (no LD_PRELOAD) and through both; each call
#      once, NCCL's choices, the same losses
#  18  calls the sampling leaves untimed, then 3 s idle with the comm
#      alive: the watchdog's probe confirms them (no hang, nothing in
#      flight); with NCCLGUARD_TIMING=0, no completion and still no hang
#  19  trust and honest numbers (tests/gpu/trust19.sh): a killed rank's
#      calls unconfirmed, not hung; a fast untimed loop's numbers; a policy
#      under a folder others can write refused; a squatted meeting folder;
#      bit flips in a real trace
#  20  hardware evidence: the DDP example under `ncclguard run` with the
#      sampler every 0.5 s (the real NVML and sysfs): its devices, what
#      it could not read, its cost per sample; an injected stall: the
#      watchdog's timeout takes a sample (hw_sample "timeout")
#  21  (NP>=2) output verification: bench/sdc_premise.py (all-reduce sum,
#      avg, premul-sum; all-gather; broadcast; three types, four sizes)
#      under `run --verify all`, NCCL's default and each algorithm and
#      protocol forced: every rank's fingerprints the same, and what NCCL
#      ran (its profiler's coll_algo); a corruption injected on rank 1 is
#      the one mismatch, on rank 1; graph capture: no captured call copied
#  22  (NP>=2) heartbeats on real NCCL: the last rank skips seq 20 of 20
#      quick all-reduces; the others' watchdogs beat every 2 s while they
#      wait in it (seq 20, 19 seen complete), the skipping rank not; the
#      watchdog's timeout (8 s) ends them.  Then live (tests/gpu/live22.sh):
#      watch attached first and 20 s late names that hang; a 20 ms delay
#      on rank 1 named a straggler, and /metrics' lateness
#  23  (NP=4) NCCL 2.30 built from source (tests/gpu/nccl230.sh): the
#      profiler plugin v6 and env plugin v2 loaded from the shim; a comm
#      grown 2 -> 4 and shrunk, a call while suspended refused, ncclParam*;
#      a signal wait never satisfied named by the watchdog
# STAGES="1 2 3" picks stages (default all); NP ranks, default 1;
# NG_HEADERS=own builds everything against common/abi/ instead of the
# real headers.  With
# more ranks than GPUs, torchrun's ranks share them, each a host of its own
# to NCCL (tests/gpu/fakehost.sh): real NCCL between ranks over its socket
# transport, slow; stages 2 and 10 need a GPU per rank and are left out,
# and stage 15 measures its pair under torchrun only.
# Prints a short table last; logs and reports go to $OUT.
set -u
cd "$(dirname "$0")/../.."
. tests/gpu/env.sh
# Work in /tmp; what comes back (at most 8 files) is copied to $RESULTS.
RESULTS=${OUT:-}
OUT=/tmp/ngout; rm -rf "$OUT"; mkdir -p "$OUT"
STAGES=${STAGES:-"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23"}
NP=${NP:-1}
NGPU=$(nvidia-smi -L | grep -c '^GPU')
[ -n "${CUDA_VISIBLE_DEVICES+x}" ] && NGPU=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
TR="torchrun --standalone --nproc_per_node=$NP"
FAKE=0 FH=
if [ "$NP" -gt "$NGPU" ]; then
	FAKE=1
	FH=$PWD/tests/gpu/fakehost.sh
	TR="$TR --no-python $FH python3"
fi
REPS=${REPS:-3}
TABLE=$OUT/table.txt; : >"$TABLE"
row() { printf "%-46s %s\n" "$1" "$2" | tee -a "$TABLE"; }
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
# A stage that hangs (a bug of ours, or of the job) ends after STAGE_TIMEOUT
# seconds (exit 124) and the next one runs; whatever ends the script, what
# it has found so far comes back.
st() { timeout -k 10 "${STAGE_TIMEOUT:-180}" "$@"; }
collect() {
	trap - EXIT TERM INT
	echo; echo "== summary"; cat "$TABLE"
	[ -n "$RESULTS" ] || return 0
	cp "$TABLE" "$RESULTS/"
	cp "$OUT"/overhead-*.txt "$RESULTS/" 2>/dev/null
	cat "$OUT"/*_analyze.txt >"$RESULTS/analyze.txt" 2>/dev/null
	tail -n 30 "$OUT"/*.log >"$RESULTS/logs.txt" 2>/dev/null
	# The traces themselves (small), for the analyzer's golden tests.
	(cd "$OUT" && tar czf "$RESULTS/traces.tgz" --exclude='*.json' --exclude='*.html' \
		$(ls -d */ 2>/dev/null) 2>/dev/null)
	cp "$OUT"/ncclguard-hang-*.json "$RESULTS/" 2>/dev/null | head -1
}
trap collect EXIT
stage() { row "$1 (started at second)" "$SECONDS"; }
trap 'exit 143' TERM INT

nvidia-smi -L | head -8
# The stages record through a session daemon, as does the training of
# `make pgo`, the build every figure here is of.
lt lttng-sessiond --daemonize --no-kernel --consumerd64-path="$LTTNG_CONSUMERD64_BIN" >/dev/null 2>&1
# NG_GPU_BUILD=all: a plain build, for stages that measure no speed.
ngmake -j16 "${NG_GPU_BUILD:-pgo}" >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
mkdir -p build/gpu
# NG_HEADERS=own: the shim (make reads it) and the C programs below are
# built against the project's own declarations (common/abi/), not the
# wheel's and CUDA's headers, as on a host that has neither.
HDRS="-I$NCCL_HOME/include -I$CUDA_HOME/include"
[ "${NG_HEADERS:-}" = own ] && HDRS="-I$PWD/common/abi"
GCC_NCCL="-O2 $HDRS -L$NCCL_LIBDIR -L$CUDA_HOME/lib64 -l:libnccl.so.2 -lcudart"
gcc -o build/gpu/allreduce examples/allreduce.c $GCC_NCCL -lm &&
gcc -o build/gpu/job tests/preload/job.c $GCC_NCCL || exit 1
export LD_LIBRARY_PATH="$NCCL_LIBDIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NG=$PWD/build/bin/ncclguard
SHIM=$PWD/build/lib/libncclguard.so
sleep 1
losses() { grep '^step [0-9]' "$1" | md5sum | cut -c1-8; }
count() { lt babeltrace2 "$1" 2>/dev/null | grep -c "ncclguard:$2:" ; }

if want 1; then
	stage 1
	st $TR examples/train_ddp.py --steps 30 >"$OUT/ddp_plain.log" 2>&1
	# Ranks sharing a GPU cannot each be pinned to one of their own.  The
	# policy's interfaces (not lo) stay: they talk over the host's address.
	POL=examples/policy/single-node.conf
	[ $FAKE = 1 ] && sed 's/^pin = .*/pin = none/; /^numa = /d' $POL >"$OUT/fake.conf" && POL=$OUT/fake.conf
	st $NG run -o "$OUT/ddp" --policy $POL -- \
		$TR examples/train_ddp.py --steps 30 >"$OUT/ddp_run.log" 2>&1
	row "1 ddp under ncclguard run: exit" "$?"
	row "1 losses plain / shim (md5)" "$(losses "$OUT/ddp_plain.log") / $(losses "$OUT/ddp_run.log")"
	$NG analyze "$OUT/ddp" --json "$OUT/ddp_report.json" >"$OUT/ddp_analyze.txt" 2>&1
	row "1 analyze: exit" "$?"
	row "1 events coll_enqueue / coll_complete" "$(count "$OUT/ddp" coll_enqueue) / $(count "$OUT/ddp" coll_complete)"
	lt babeltrace2 "$OUT/ddp" 2>/dev/null | grep -E "process_info|coll_complete|policy" | head -8 >"$OUT/ddp_events.txt"
	grep -h "ncclguard\[" "$OUT/ddp_run.log" | head -5
fi
if want 2 && [ $FAKE = 0 ]; then
	stage 2
	st build/gpu/allreduce --launch $NP --min-bytes 8 --max-bytes 256M --iters 20 --warmup 5 >"$OUT/sweep_plain.log" 2>&1
	st $NG run -o "$OUT/sweep" -- build/gpu/allreduce --launch $NP --min-bytes 8 --max-bytes 256M \
		--iters 20 --warmup 5 >"$OUT/sweep_run.log" 2>&1
	row "2 allreduce sweep under ncclguard run: exit" "$?"
	$NG analyze "$OUT/sweep" >"$OUT/sweep_analyze.txt" 2>&1
	row "2 analyze: exit" "$?"
fi
if want 3; then
	stage 3
	st $TR examples/graph_capture.py >"$OUT/graph_plain.log" 2>&1
	row "3 graph capture without the shim: exit" "$?"
	st $NG run -o "$OUT/graph" -- $TR examples/graph_capture.py >"$OUT/graph.log" 2>&1
	row "3 graph capture: exit" "$?"
	row "3 graph result" "$(grep -o 'graph replays.*' "$OUT/graph.log")"
	row "3 captured coll_enqueue events" "$(lt babeltrace2 "$OUT/graph" 2>/dev/null | grep coll_enqueue | grep -c 'captured = 1')"
fi
if want 4; then
	stage 4
	rm -f /tmp/nb.id
	st $NG run -o "$OUT/nb" -- env RANK=0 WORLD_SIZE=1 build/gpu/job /tmp/nb.id 20 --nonblocking --poll >"$OUT/nb.log" 2>&1
	row "4 nonblocking comm job: exit" "$?"
	row "4 nonblocking: iterations ok / coll_complete" "$(grep -c 'ok$' "$OUT/nb.log") / $(count "$OUT/nb" coll_complete)"
	# A nonblocking split: NCCL hands its comm over only when the parent's
	# poll says it is ready; every call on it must be on a known comm.
	rm -f /tmp/nbs.id
	st $NG run -o "$OUT/nbs" -- env NCCLGUARD_LOG=debug RANK=0 WORLD_SIZE=1 \
		build/gpu/job /tmp/nbs.id 20 --nonblocking --poll --split >"$OUT/nbs.log" 2>&1
	row "4 nonblocking split job: exit / ok" "$? / $(grep -c 'ok$' "$OUT/nbs.log")"
	row "4 split registered (log)" "$(grep -c 'rank 0 of 1 on device [0-9]* (split)' "$OUT/nbs.log")"
	row "4 split: comm_init_end / coll_enqueue / on no comm" "$(count "$OUT/nbs" comm_init_end) / \
$(count "$OUT/nbs" coll_enqueue) / $(lt babeltrace2 "$OUT/nbs" 2>/dev/null | grep coll_enqueue | grep -c 'comm_hash = 0x0,')"
fi
if want 5; then
	stage 5
	start=$(date +%s.%N)
	NCCLGUARD_TIMEOUT=5 NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_DUMP_DIR=$OUT NCCLGUARD_INJECT="stall:op=allreduce,seq=10" \
		LD_PRELOAD=$SHIM st $TR examples/train_ddp.py --steps 30 >"$OUT/stall.log" 2>&1
	rc=$?
	row "5 stall: torchrun exit / seconds" "$rc / $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}")"
	grep -E "ncclguard\[|Watchdog|watchdog|timeout|exitcode" "$OUT/stall.log" | head -8
fi
if want 6; then
	stage 6
	# In one process, blocks through the shim against blocks calling NCCL
	# directly (bench/ab_loop.c): the drift between processes on these VMs
	# is larger than the effect.  Value: added %, median over rounds.
	OUT=$OUT MODE=ab ROUNDS=${REPS} VARIANTS="plain notiming shim nosession rec" bash bench/gpu_overhead.sh >"$OUT/ab.txt" 2>&1
	for v in plain notiming shim nosession rec; do
		row "6 8-byte all-reduce, added % (ab): $v" "$(awk -v v=$v '$1 == v {print $2 " [" $3 "]"; exit}' "$OUT/overhead-ab.txt")"
	done
fi
if want 7; then
	stage 7
	OUT=$OUT MODE=ddp ROUNDS=${REPS} VARIANTS="plain shim rec" bash bench/gpu_overhead.sh >"$OUT/ddp.txt" 2>&1
	for v in plain shim rec; do
		row "7 DDP step ms (median), vs plain: $v" "$(awk -v v=$v '$1 == v {print $2 " " $4 " [" $3 "]"; exit}' "$OUT/overhead-ddp.txt")"
	done
fi
if want 8 && [ "$NP" -ge 2 ]; then
	stage 8
	st $NG run -o "$OUT/delay" --inject "delay:ms=20,rank=1,op=allreduce" -- \
		$TR examples/train_ddp.py --steps 20 >"$OUT/delay.log" 2>&1
	row "8 delay on rank 1: exit" "$?"
	$NG analyze "$OUT/delay" >"$OUT/delay_analyze.txt" 2>&1
	row "8 straggler finding" "$(grep -m1 -o 'straggler: rank [0-9]* arrived last in [0-9]*%' "$OUT/delay_analyze.txt")"
fi
if want 9 && [ "$NP" -ge 2 ]; then
	stage 9
	start=$(date +%s.%N)
	st $NG run -o "$OUT/drop" --timeout 5 --on-timeout exit --inject "drop:rank=1,op=allreduce,seq=20" -- \
		env NCCLGUARD_DUMP_DIR=$OUT $TR examples/train_ddp.py --steps 40 >"$OUT/drop.log" 2>&1
	row "9 drop on rank 1: exit / seconds" "$? / $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}")"
	row "9 rank 0 report" "$(grep -m1 -o 'rank 0 pid [0-9]*\]: [a-z]* seq [0-9]* on comm [0-9a-f]* ([0-9]* ranks, [^)]*) not complete after [0-9.]* s' "$OUT/drop.log")"
	row "9 exit statuses" "$(grep -o 'exitcode *: *[0-9-]*' "$OUT/drop.log" | tr '\n' ' ')"
	$NG analyze "$OUT/drop" >"$OUT/drop_analyze.txt" 2>&1
	row "9 hang finding" "$(grep -m1 'hang' "$OUT/drop_analyze.txt" | cut -c1-150)"
fi
if want 10 && [ "$NP" -ge 2 ] && [ $FAKE = 0 ]; then
	stage 10
	rev=$(seq $((NP - 1)) -1 0 | paste -sd,)
	sed "s/^gpus = .*/gpus = $rev/" examples/policy/single-node.conf >"$OUT/reverse.conf"
	st $NG run -o "$OUT/pin" --policy "$OUT/reverse.conf" -- \
		$TR examples/train_ddp.py --steps 5 >"$OUT/pin.log" 2>&1
	row "10 reverse pin ($rev): exit" "$?"
	nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader | tr '\n' ' ' | sed 's/^/10 nvidia-smi: /'; echo
	lt babeltrace2 "$OUT/pin" 2>/dev/null | grep process_info | grep -o 'rank = [0-9]*, local_rank = [0-9]*\|gpu_pci_bus_id = "[^"]*"' | paste -sd' ' | tee -a "$TABLE"
fi
if want 11; then
	stage 11
	rm -f /tmp/inith.id
	st $NG run -o "$OUT/inith" -- env RANK=0 WORLD_SIZE=2 NCCLGUARD_INIT_TIMEOUT=10 \
		NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_DUMP_DIR=$OUT build/gpu/job /tmp/inith.id 1 >"$OUT/inith.log" 2>&1
	row "11 hung init: exit (4: the watchdog)" "$?"
	row "11 watchdog" "$(grep -m1 -o 'host call ncclCommInit[A-Za-z]* (comm [0-9a-f]*) has not returned after [0-9.]* s' "$OUT/inith.log")"
	$NG analyze "$OUT/inith" >"$OUT/inith_analyze.txt" 2>&1
	row "11 analyze: exit" "$?"
	row "11 hang finding" "$(grep -m1 -o 'hang: init of comm.*never entered it[^;]*' "$OUT/inith_analyze.txt")"
	# The same with a nonblocking init: no call hangs, the program polls.
	rm -f /tmp/inithnb.id
	st $NG run -o "$OUT/inithnb" -- env RANK=0 WORLD_SIZE=2 NCCLGUARD_INIT_TIMEOUT=10 \
		NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_DUMP_DIR=$OUT build/gpu/job /tmp/inithnb.id 1 --nonblocking >"$OUT/inithnb.log" 2>&1
	row "11 nonblocking hung init: exit (4)" "$?"
	row "11 nonblocking watchdog" "$(grep -m1 -o 'comm [0-9a-f]* (nonblocking [a-z]*) still initializing after [0-9.]* s' "$OUT/inithnb.log")"
	$NG analyze "$OUT/inithnb" >"$OUT/inithnb_analyze.txt" 2>&1
	row "11 nonblocking: analyze exit / finding" "$? / $(grep -m1 -o 'hang: init of comm.*never entered it[^;]*' "$OUT/inithnb_analyze.txt")"
fi
if want 12; then
	stage 12
	# NCCL's configuration file, which NCCL applies only when it starts:
	# NCCL says it took NCCL_COMM_BLOCKING from it, the comm is recorded
	# nonblocking, and process_info carries the file's variables.
	printf 'NCCL_COMM_BLOCKING=0\nNCCL_IB_HCA=mlx5_7\n' >/tmp/ng_nccl.conf
	# With NP ranks, ranks 1 and up read the id from a file: their first
	# NCCL call is their init, which the file must already reach.
	rm -f /tmp/conf.id
	st $NG run -o "$OUT/conf" -- env NCCL_CONF_FILE=/tmp/ng_nccl.conf NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV \
		tests/gpu/ranks.sh "$NP" build/gpu/job /tmp/conf.id 5 --poll --split >"$OUT/conf.log" 2>&1
	row "12 conf file job: exit / ok" "$? / $(grep -c 'ok$' "$OUT/conf.log")"
	row "12 NCCL: COMM_BLOCKING from the file" "$(grep -c 'NCCL_COMM_BLOCKING set by environment to 0' "$OUT/conf.log")"
	row "12 comm_init_begin with blocking = 0 / all" "$(lt babeltrace2 "$OUT/conf" 2>/dev/null | grep comm_init_begin | grep -c 'blocking = 0') / $(count "$OUT/conf" comm_init_begin)"
	row "12 process_info env has the file's NCCL_IB_HCA" "$(lt babeltrace2 "$OUT/conf" 2>/dev/null | grep process_info | grep -c 'NCCL_IB_HCA=mlx5_7')"
fi
if want 13; then
	stage 13
	AR="build/gpu/allreduce --launch 1 --min-bytes 8 --max-bytes 8 --warmup 0"
	# the runtime folder (run/rundir.c)
	if [ "$(id -u)" = 0 ]; then FL=/run/ncclguard
	elif [ -d "${XDG_RUNTIME_DIR:-/nonexistent}" ]; then FL=$XDG_RUNTIME_DIR/ncclguard
	else FL=/dev/shm/ncclguard-$(id -u); fi
	st $NG run -o "$OUT/jobA" -- $AR --iters 3000 >"$OUT/jobA.log" 2>&1 &
	a=$!
	st $NG run -o "$OUT/jobB" -- $AR --iters 2000 >"$OUT/jobB.log" 2>&1
	wait $a
	row "13 two jobs at once: process_info in A / B" "$(count "$OUT/jobA" process_info) / $(count "$OUT/jobB" process_info)"
	row "13 two jobs at once: coll_enqueue in A / B" "$(count "$OUT/jobA" coll_enqueue) / $(count "$OUT/jobB" coll_enqueue)"
	# A rank killed mid-run: its calls still on their way are kept.
	for k in 1 2 3; do
		$NG run -o "$OUT/kill$k" --timeout 5 -- $AR --iters 20000000 >"$OUT/kill$k.log" 2>&1 &
		ng=$!
		sleep 5
		pid=$(ls $FL/*/*.ring 2>/dev/null | sed -n '1s,.*/\([0-9]*\)\.ring$,\1,p')
		[ -n "$pid" ] && kill -9 "$pid"
		wait $ng
		$NG analyze "$OUT/kill$k" --json "$OUT/kill$k.json" >"$OUT/kill${k}_analyze.txt" 2>&1
		row "13 killed rank $k: calls kept / analyze exit" "$(sed -n 's/.*died with \([0-9]*\) call.*/\1/p' "$OUT/kill$k.log") / $?"
		row "13 killed rank $k: report says" "$(grep -m1 -o 'calls_recovered: .*' "$OUT/kill${k}_analyze.txt" | cut -c1-150)"
	done
	# ncclguard run killed: the job and its session end with it.
	$NG run -o "$OUT/lk" -- $AR --iters 20000000 >"$OUT/lk.log" 2>&1 &
	ng=$!
	sleep 5
	kill -9 $ng
	# The guardian stops the job, then ends the recording and writes
	# run.json: wait for that, not a fixed time.  Ranks by process name:
	# the guardian keeps run's command line.
	for _ in $(seq 120); do grep -qs '"status"' "$OUT"/lk/*/run.json && break; sleep 0.5; done
	# A zombie is not a rank left running: with run gone, the job's parent
	# is whatever reaps orphans in this container, if anything does.
	row "13 launcher killed: ranks left (zombies) / sessions" \
		"$(ps -C allreduce -o stat= | grep -vc '^Z') ($(ps -C allreduce -o stat= | grep -c '^Z')) / $(lt lttng list 2>/dev/null | grep -c '\[active\]')"
	row "13 launcher killed: run.json status" "$(grep -ho '"status": "[a-z_]*"' "$OUT"/lk/*/run.json)"
fi
if want 14; then
	stage 14
	# A rank stalled inside its call: the hang, its state, its dump, and
	# analyze --fail-on hang failing a CI job.
	AR="build/gpu/allreduce --launch 1 --min-bytes 8 --max-bytes 8 --warmup 0"
	st $NG run -o "$OUT/stall" --timeout 3 --on-timeout exit --inject 'stall:rank=0,seq=20' -- \
		$AR --iters 100 >"$OUT/stall.log" 2>&1
	row "14 stalled rank: job exit (4: watchdog)" "$?"
	$NG analyze "$OUT/stall" --fail-on hang --json "$OUT/stall.json" >"$OUT/stall_analyze.txt" 2>&1
	row "14 analyze --fail-on hang: exit (5: found)" "$?"
	row "14 hang finding" "$(grep -m1 -o 'hang: .*' "$OUT/stall_analyze.txt" | cut -c1-150)"
	row "14 rank_state / hang_dumps (calls)" "$(python3 -c "
import json; r = json.load(open('$OUT/stall.json'))
print([h.get('rank_state') for h in r['hangs']], [[c['where'] for c in d['calls']] for d in r['hang_dumps']])" 2>&1)"
	# The Chrome trace of a sweep: host and GPU tracks, flows, and GPU
	# slices drawn no earlier than their enqueue.
	[ -d "$OUT/sweep" ] || st $NG run -o "$OUT/sweep" -- build/gpu/allreduce --launch 1 \
		--min-bytes 8 --max-bytes 64M --iters 20 --warmup 5 >"$OUT/sweep_run.log" 2>&1
	$NG analyze "$OUT/sweep" --chrome "$OUT/sweep_chrome.json" --json "$OUT/sweep.json" >/dev/null 2>&1
	row "14 chrome: GPU slices / moved to their enqueue" "$(python3 -c "
import json; t = json.load(open('$OUT/sweep_chrome.json'))
ev = t['traceEvents']; gpu = [e for e in ev if e.get('ph') == 'X' and e.get('tid') != 1]
moved = [e['args']['moved_us'] for e in gpu if 'moved_us' in e.get('args', {})]
print(len(gpu), '/', len(moved), 'max', max(moved) if moved else 0, 'us;', t.get('otherData', {}).get('gpu_slices_moved'))" 2>&1)"
	row "14 healthy sweep: findings" "$(python3 -c "
import json; print([f['kind'] for f in json.load(open('$OUT/sweep.json'))['findings']])" 2>&1)"
fi
if want 15; then
	stage 15
	st $NG matrix --local 1 -o "$OUT/mx1" >"$OUT/mx1.log" 2>&1
	row "15 matrix, one rank: exit (2) / written (no)" "$? / $([ -e "$OUT/mx1" ] && echo yes || echo no)"
	if [ "$NP" -ge 2 ] && [ $FAKE = 0 ]; then
		st $NG matrix --local "$NP" -o "$OUT/mx" >"$OUT/mx.log" 2>&1
		row "15 matrix --local $NP: exit (0) / pairs" "$? / $(tail -n 2 "$OUT/mx.log" | head -n 1)"
		grep -A $((NP + 2)) '^bus bandwidth' "$OUT/mx.log" | tee -a "$TABLE"
		st torchrun --standalone --nproc_per_node="$NP" --no-python $NG matrix -o "$OUT/mxt" \
			>"$OUT/mxt.log" 2>&1
		row "15 matrix under torchrun: exit (0) / pairs" "$? / $(grep -E -m1 'pairs?: ' "$OUT/mxt.log")"
	elif [ "$NP" -ge 2 ]; then
		# Ranks on one GPU as hosts of their own: the pairs run over
		# NCCL's socket transport, a path and not a bandwidth.
		st torchrun --standalone --nproc_per_node="$NP" --no-python $FH $NG matrix -o "$OUT/mxt" \
			>"$OUT/mxt.log" 2>&1
		row "15 matrix, $NP ranks as hosts on $NGPU GPU(s): exit (0) / pairs" "$? / $(grep -E -m1 'pairs?: ' "$OUT/mxt.log")"
	else
		# NCCL refuses two ranks on one GPU: the pair fails, with its reason.
		st $NG matrix --local 2 --timeout 20 -o "$OUT/mx2" >"$OUT/mx2.log" 2>&1
		row "15 matrix, 2 ranks on 1 GPU: exit (1) / reason" "$? / $(grep -m1 -o '0-1  .*' "$OUT/mx2.log" | cut -c1-150)"
	fi
fi
if want 16; then
	stage 16
	# Everything on 127.0.0.1, one host: what it shows is the relay, live
	# sessions and watch on real NCCL and PyTorch.  With one GPU the job
	# has one rank: a stalled rank has no peer waiting for it, so watch
	# shows its watchdog's timeout, not a hang line; the hang between
	# ranks is the init that rank 1 never joins.  The sim runs the same
	# steps: tests/live/test_gpu_stage16.sh.
	. tests/gpu/live16.sh
	rm -f /tmp/s16init.id
	S16_STUCK=5 S16_TIMEOUT=20 s16_stage \
		"$TR examples/train_ddp.py --steps 30" \
		"stall:rank=$((NP - 1)),op=allreduce,seq=10" \
		"env RANK=0 WORLD_SIZE=2 NCCLGUARD_INIT_TIMEOUT=20 $PWD/build/gpu/job /tmp/s16init.id 1"
fi
if want 17; then
	stage 17
	# nccl-tests, as gpu_overhead.sh builds it (a clone in .nccl-tests).
	NT=/tmp/nccltests; mkdir -p /tmp/ncclhome/lib
	ln -sf "$NCCL_HOME/include" /tmp/ncclhome/include
	ln -sf "$NCCL_LIBDIR/libnccl.so.2" /tmp/ncclhome/lib/libnccl.so
	[ -x $NT/all_reduce_perf ] || make -j16 -C .nccl-tests NCCL_HOME=/tmp/ncclhome CUDA_HOME="$CUDA_HOME" \
		BUILDDIR=$NT NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/nccltests.log" 2>&1
	ARP="$NT/all_reduce_perf -b 8 -e 64M -f 8 -g 1 -n 20 -w 5 -c 1"
	colls() { python3 -c "
import json, sys; r = json.load(open(sys.argv[1]))
big = max((c for c in r['collectives'] if c['op'] == 'allreduce'), key=lambda c: c['bytes'], default=None)
print(sum(c['calls'] for c in r['collectives']), sorted({(c['algo'], c['proto']) for c in r['collectives']}),
      [f['kind'] for f in r['findings']],
      big and '%d B: %d of %d timed, p50 %s us' % (big['bytes'], big['timed'], big['calls'], big['time_us'] and big['time_us']['p50']))" "$1" 2>&1; }
	for how in plugin both; do
		un=; [ $how = plugin ] && un="-u LD_PRELOAD"
		st $NG run -o "$OUT/p17_nt_$how" -- env $un $ARP >"$OUT/p17_nt_$how.log" 2>&1
		row "17 nccl-tests, $how: exit / wrong" "$? / $(awk '/Out of bounds values/ {print $NF}' "$OUT/p17_nt_$how.log")"
		$NG analyze "$OUT/p17_nt_$how" --json "$OUT/p17_nt_$how.json" >"$OUT/p17_nt_${how}_analyze.txt" 2>&1
		row "17 nccl-tests, $how: analyze exit / calls, algo, findings" "$? / $(colls "$OUT/p17_nt_$how.json")"
		st $NG run -o "$OUT/p17_ddp_$how" -- env $un $TR examples/train_ddp.py --steps 30 >"$OUT/p17_ddp_$how.log" 2>&1
		row "17 ddp, $how: exit / losses (md5)" "$? / $(losses "$OUT/p17_ddp_$how.log")"
		$NG analyze "$OUT/p17_ddp_$how" --json "$OUT/p17_ddp_$how.json" >"$OUT/p17_ddp_${how}_analyze.txt" 2>&1
		row "17 ddp, $how: analyze exit / calls, algo, findings" "$? / $(colls "$OUT/p17_ddp_$how.json")"
	done
	st $TR examples/train_ddp.py --steps 30 >"$OUT/p17_ddp_plain.log" 2>&1
	row "17 ddp, no ncclguard: losses (md5)" "$(losses "$OUT/p17_ddp_plain.log")"
fi
if want 18; then
	stage 18
	# One rank makes 3000 calls a second; ranks sharing a GPU fewer.
	n=3000; [ $FAKE = 1 ] && n=1000
	for t in 1 0; do
		rm -f /tmp/tail$t.id
		st $NG run -o "$OUT/tail$t" -- env NCCLGUARD_TIMING=$t \
			tests/gpu/ranks.sh "$NP" build/gpu/job /tmp/tail$t.id $n --bytes 8 --sleep 3 >"$OUT/tail$t.log" 2>&1
		row "18 untimed tail, timing $t: exit (0) / ok" "$? / $(grep -c 'iter [0-9]* ok' "$OUT/tail$t.log")"
		$NG analyze "$OUT/tail$t" --fail-on hang --json "$OUT/tail$t.json" >"$OUT/tail${t}_analyze.txt" 2>&1
		row "18 timing $t: analyze --fail-on hang (0) / calls, timed / in flight" "$? / $(python3 -c "
import json; r = json.load(open('$OUT/tail$t.json'))
print([(c['calls'], c['timed']) for c in r['collectives']], r['hangs'], [i.get('what') for i in r['incomplete']])" 2>&1) / $(grep -c 'in flight' "$OUT/tail${t}_analyze.txt")"
		row "18 timing $t: coll_complete / without GPU times" "$(count "$OUT/tail$t" coll_complete) / \
$(lt babeltrace2 "$OUT/tail$t" 2>/dev/null | grep coll_complete: | grep -c 'gpu_start_ns = 0,')"
	done
fi
if want 19; then
	stage 19
	. tests/gpu/trust19.sh
fi
if want 20; then
	stage 20
	hwev() { lt babeltrace2 "$1" 2>/dev/null | grep "ncclguard:hw_" | sed 's/.*ncclguard:/ncclguard:/; s/{ cpu_id.*procname = "[^"]*" }, //'; }
	st $NG run -o "$OUT/hw" --health-interval 0.5 -- \
		$TR examples/train_ddp.py --steps 30 >"$OUT/hw_run.log" 2>&1
	row "20 ddp with the sampler at 0.5 s: exit" "$?"
	hwev "$OUT/hw" >"$OUT/hw_events.txt"
	row "20 hw_device / hw_sample / hw_change" "$(grep -c hw_device "$OUT/hw_events.txt") / $(grep -c hw_sample "$OUT/hw_events.txt") / $(grep -c hw_change "$OUT/hw_events.txt")"
	row "20 sample cost ns (start, end)" "$(sed -n 's/.*hw_sample.*why = "\([a-z]*\)".*cost_ns = \([0-9]*\).*/\1 \2/p' "$OUT/hw_events.txt" | tr '\n' ' ')"
	$NG analyze "$OUT/hw" --json "$OUT/hw_report.json" >"$OUT/hw_analyze.txt" 2>&1
	row "20 analyze: exit" "$?"
	st $NG run -o "$OUT/hwto" --health-interval 0.5 --timeout 4 --on-timeout exit \
		--inject "stall:op=allreduce,seq=10" -- \
		$TR examples/train_ddp.py --steps 30 >"$OUT/hwto_run.log" 2>&1
	row "20 stall: exit" "$?"
	hwev "$OUT/hwto" >"$OUT/hwto_events.txt"
	row "20 stall: hw_sample why" "$(sed -n 's/.*hw_sample.*why = "\([a-z]*\)".*/\1/p' "$OUT/hwto_events.txt" | tr '\n' ' ')"
	grep -h "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_[TR]X \|NVML_FI_DEV_NVLINK_ERROR_DL_\|NVML_FI_DEV_NVLINK_GET_STATE \|define NVML_FI_DEV_NVLINK_COUNT_" \
		"$CUDA_HOME/include/nvml.h" >"$OUT/hw_nvml_fields.txt" 2>&1
	if [ -n "$RESULTS" ]; then
		cp "$OUT/hw_events.txt" "$OUT/hwto_events.txt" "$OUT/hw_nvml_fields.txt" "$RESULTS/"
		cp "$OUT/hw_analyze.txt" "$RESULTS/hw_analyze.txt"
	fi
fi
if [ "$NP" -ge 2 ] && want 21; then
	stage 21
	fpc() { lt babeltrace2 "$1" 2>/dev/null | python3 tests/gpu/fpcheck.py; }
	AR="allreduce:ring;allgather:ring;broadcast:ring"
	AT="allreduce:tree;allgather:ring;broadcast:ring"
	i=0
	for c in "|" "$AR|LL" "$AR|LL128" "$AR|Simple" "$AT|LL" "$AT|LL128" "$AT|Simple" \
		 "allreduce:ring;allgather:pat|Simple"; do
		i=$((i + 1))
		a=${c%%|*} p=${c#*|}
		st $NG run -o "$OUT/sdc$i" --verify all -- env ${a:+NCCL_ALGO=$a} ${p:+NCCL_PROTO=$p} \
			CASE="${a:-default}/${p:-default}" $TR bench/sdc_premise.py >"$OUT/sdc$i.log" 2>&1
		row "21 ${a:-default}/${p:-default}: exit" "$? $(grep -h 'cases differing' "$OUT/sdc$i.log" | sed 's/.*: //')"
		fpc "$OUT/sdc$i" >"$OUT/sdc$i.fp"
		row "21   fingerprints" "$(head -1 "$OUT/sdc$i.fp")"
		row "21   NCCL ran" "$(sed -n 's/^  algos: //p' "$OUT/sdc$i.fp")"
	done
	st $NG run -o "$OUT/sdcbad" --verify all --inject "corrupt:rank=1,seq=7" -- \
		$TR bench/sdc_premise.py >"$OUT/sdcbad.log" 2>&1
	row "21 corrupt rank 1 seq 7: exit" "$?"
	fpc "$OUT/sdcbad" >"$OUT/sdcbad.fp"
	row "21   fingerprints" "$(tr '\n' ' ' <"$OUT/sdcbad.fp")"
	$NG analyze "$OUT/sdcbad" --json "$OUT/sdcbad_report.json" >"$OUT/sdcbad_analyze.txt" 2>&1
	row "21   analyze: data_mismatch" "$(grep -c data_mismatch "$OUT/sdcbad_report.json" 2>/dev/null)"
	st $NG run -o "$OUT/sdcgraph" --verify all -- \
		$TR examples/graph_capture.py >"$OUT/sdcgraph.log" 2>&1
	row "21 graph capture: exit" "$?"
	row "21   fingerprints" "$(fpc "$OUT/sdcgraph" | head -1)"
	[ -n "$RESULTS" ] && cat "$OUT"/sdc*.fp >"$RESULTS/sdc_fp.txt"
fi
if [ "$NP" -ge 2 ] && want 22; then
	stage 22
	rm -f /tmp/s22.id
	st $NG run -o "$OUT/hb22" --timeout 8 --on-timeout exit -- tests/gpu/ranks.sh "$NP" \
		build/gpu/allreduce --id-file /tmp/s22.id --iters 20 --warmup 0 --min-bytes 8 \
		--max-bytes 8 --skip-seq 20 --skip-rank $((NP - 1)) >"$OUT/hb22.log" 2>&1
	row "22 skip seq 20 on rank $((NP - 1)): exit (4)" "$?"
	row "22   heartbeats: per rank, (last, done, waiting, op, seq), gaps s" "$(lt babeltrace2 "$OUT/hb22" 2>/dev/null | python3 -c '
import re, sys
by = {}
for l in sys.stdin:
    if "ncclguard:heartbeat:" not in l:
        continue
    h, m, s = re.match(r"\[(\d+):(\d+):([\d.]+)\]", l).groups()
    d = dict(re.findall(r"(\w+) = (\"[^\"]*\"|[^,}]+)", l.split("}, {")[-1]))
    by.setdefault(d["rank"], []).append((int(h) * 3600 + int(m) * 60 + float(s), d))
for r in sorted(by, key=int):
    b = by[r]
    print("rank %s: %d %s gaps %s;" % (r, len(b), sorted({(d["last_seq"], d["done_seq"], d["waiting"], d["op"], d["wait_seq"]) for _, d in b}),
          ["%.1f" % (y[0] - x[0]) for x, y in zip(b, b[1:])]), end=" ")
print()' 2>&1)"
	. tests/gpu/live22.sh
	s22_live
fi
if [ "$NP" -ge 4 ] && want 23; then
	stage 23
	. tests/gpu/nccl230.sh
fi
if [ "$NP" -ge 2 ] && [ $FAKE = 0 ] && want 2; then nvidia-smi topo -m | tee -a "$OUT/topo.txt"; fi
collect
