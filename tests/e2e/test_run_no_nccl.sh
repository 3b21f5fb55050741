#!/bin/sh
# A job that never reaches NCCL is told its true cause, and `ncclguard run`
# leaves nothing that refuses the same -o next time: a command that cannot
# be started leaves nothing; a job that ends before its first NCCL call
# keeps only its run record ("recorded": false), which the next run with
# the same -o replaces; a folder that holds a trace is still refused.  The
# shim's "calls NCCL through dlopen/dlsym" hint stays where it is true.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EX="$NG_BUILD/bin/allreduce_example"
XLA="$NG_BUILD/tests/preload/xla_like"
[ -x "$EX" ] && [ -x "$XLA" ] && [ -f "$NG_SIM/libnccl.so.2" ] || fail "CPU backend or examples not built"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
SMALL="--launch 2 --min-bytes 8 --max-bytes 8 --iters 2 --warmup 0"

# run DIR LOG ARGS...: ncclguard run -o $NG_TMP/DIR ARGS, output in
# $NG_TMP/LOG.out and .err; sets rc.
run() {
	dir=$1 log=$2; shift 2
	rc=0
	"$NG_BIN" run -o "$NG_TMP/$dir" "$@" >"$NG_TMP/$log.out" 2>"$NG_TMP/$log.err" </dev/null || rc=$?
}
# no_false_hints LOG: none of the hints that misled before.
no_false_hints() {
	assert_no_grep "preloaded" "$NG_TMP/$1.err"
	assert_no_grep "dlopen/dlsym" "$NG_TMP/$1.err"
	assert_no_grep "already holds" "$NG_TMP/$1.err"
}

note "a command not found, twice into the same -o: 127, said, nothing left"
for i in 1 2; do
	run nocmd nocmd$i -- no-such-command-$$
	assert_eq "$rc" 127 "exit status of a missing command (run $i)"
	assert_grep "^ncclguard run: no-such-command-$$: command not found$" "$NG_TMP/nocmd$i.err"
	assert_grep "no-such-command-$$ did not start: nothing recorded, nothing left in $NG_TMP/nocmd\$" \
		"$NG_TMP/nocmd$i.err"
	no_false_hints nocmd$i
	[ ! -e "$NG_TMP/nocmd" ] || fail "run $i left $(find "$NG_TMP/nocmd")"
done

note "not executable, a folder: 126; a folder the user made stays, empty"
mkdir "$NG_TMP/mine"
printf 'echo hi\n' >"$NG_TMP/script"
run mine noexec -- "$NG_TMP/script"
assert_eq "$rc" 126 "exit status of a file that is not executable"
assert_grep "ncclguard run: $NG_TMP/script: permission denied (not executable)" "$NG_TMP/noexec.err"
no_false_hints noexec
run mine folder -- "$NG_TMP/mine"
assert_eq "$rc" 126 "exit status of a folder as the command"
assert_grep "ncclguard run: $NG_TMP/mine: is a directory" "$NG_TMP/folder.err"
assert_eq "$(ls -A "$NG_TMP/mine")" "" "what the runs left in a folder of the user's"

note "ranks that fail in CUDA before their first NCCL call (no GPU)"
NCCLSIM_GPUS=0 run dies dies -- "$EX" $SMALL
assert_eq "$rc" 2 "exit status of the job"
for r in 0 1; do
	assert_grep "^ncclguard\[rank $r pid [0-9]*\]: exited with status 2 before any NCCL call was seen; libnccl.so.2 was loaded; cudaGetDeviceCount failed: no CUDA-capable device is detected (cudaErrorNoDevice)$" \
		"$NG_TMP/dies.err"
done
assert_grep "nothing recorded: $EX ended with status 2 before any NCCL call was seen; $NG_TMP/dies/[^/]*/run.json says how it ended" \
	"$NG_TMP/dies.err"
no_false_hints dies
assert_no_grep "events lost" "$NG_TMP/dies.err"
assert_eq "$(cd "$NG_TMP/dies" && find . | sort | tr '\n' ' ')" ". ./$(hostname) ./$(hostname)/run.json " \
	"what the run left"
assert_eq "$(ng_run_field "$NG_TMP/dies" recorded)" false "run.json recorded"
assert_eq "$(ng_run_field "$NG_TMP/dies" exit_status)" 2 "run.json exit_status"
rc=0; "$NG_BIN" analyze "$NG_TMP/dies" >"$NG_TMP/an.out" 2>"$NG_TMP/an.err" || rc=$?
assert_eq "$rc" 1 "analyze of a run that recorded nothing"
assert_grep "no trace under $NG_TMP/dies: the run recorded nothing (the job ended with status 2 before any NCCL call was seen; run.json)" \
	"$NG_TMP/an.err"

note "the shim's look at exit for a loaded NCCL runs no library's constructor again"
# A dlopen, even RTLD_NOLOAD, after the libraries' destructors made the
# loader run every constructor a second time (CUDA's and NCCL's on a GPU
# host) in each rank that failed before its first NCCL call.
rc=0
NCCLSIM_GPUS=0 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LD_DEBUG=files LD_PRELOAD="$NG_PRELOAD" \
	"$EX" --min-bytes 8 --max-bytes 8 --iters 1 --warmup 0 >/dev/null 2>"$NG_TMP/ld.err" || rc=$?
assert_eq "$rc" 2 "exit status of the rank"
assert_grep "exited with status 2 before any NCCL call was seen; libnccl.so.2 was loaded" "$NG_TMP/ld.err"
for lib in libnccl.so.2 libcudart.so.13 libc.so.6; do
	assert_eq "$(grep -c "calling init: .*/$lib\$" "$NG_TMP/ld.err")" 1 "constructors of $lib run"
done

note "the same -o again, the job fixed: the record is replaced, the job traced"
run dies ok -- "$EX" $SMALL
assert_eq "$rc" 0 "exit status of the fixed job"
assert_grep "replacing $NG_TMP/dies/[^/]*/run.json, the record of a run that recorded nothing" \
	"$NG_TMP/ok.err"
assert_grep "(0 events lost)" "$NG_TMP/ok.err"
assert_no_grep "before any NCCL call" "$NG_TMP/ok.err"
assert_eq "$(ng_run_field "$NG_TMP/dies" recorded)" true "run.json recorded"
assert_eq "$(ng_run_field "$NG_TMP/dies" exit_status)" 0 "run.json exit_status"
ng_trace_text "$NG_TMP/dies" "$NG_TMP/ok.txt"
assert_eq "$(grep -c 'ncclguard:coll_enqueue:' "$NG_TMP/ok.txt")" 4 "all-reduces recorded"

note "a folder that holds a trace is refused, and left as it was"
ls -R "$NG_TMP/dies" >"$NG_TMP/before"
run dies again -- true
assert_eq "$rc" 2 "exit status with -o holding a trace"
assert_grep "already holds a trace; remove it or choose another -o" "$NG_TMP/again.err"
ls -R "$NG_TMP/dies" >"$NG_TMP/after"
cmp -s "$NG_TMP/before" "$NG_TMP/after" || fail "the trace folder changed: $(diff "$NG_TMP/before" "$NG_TMP/after")"

note "a rank's shell that fails without NCCL or CUDA: no note from the shim"
run shell shell -- env RANK=0 WORLD_SIZE=1 sh -c 'exit 3'
assert_eq "$rc" 3 "exit status of the shell"
assert_no_grep "ncclguard\[" "$NG_TMP/shell.err"
assert_grep "nothing recorded: env ended with status 3 before any NCCL call was seen" "$NG_TMP/shell.err"

note "NCCL called through dlsym'd pointers, no plugin: the dlopen/dlsym hint"
rc=0
env LD_PRELOAD="$NG_PRELOAD" NCCL_PROFILER_PLUGIN=none RANK=0 WORLD_SIZE=1 \
	"$XLA" "$NG_TMP/xla.id" 2 >"$NG_TMP/xla.out" 2>"$NG_TMP/xla.err" || rc=$?
assert_eq "$rc" 0 "exit status of the XLA-like rank"
assert_grep "^ncclguard\[rank 0 pid [0-9]*\]: libnccl.so.2 was loaded but no NCCL call went through the shim: the program calls NCCL through dlopen/dlsym" \
	"$NG_TMP/xla.err"
assert_no_grep "before any NCCL call" "$NG_TMP/xla.err"
echo ok
