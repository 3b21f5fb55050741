#!/bin/sh
# NCCL's profiler plugin: a program that calls the CPU backend the XLA way
# (its own handle, RTLD_DEEPBIND, dlsym) makes no call any wrapper sees;
# `ncclguard run` sets NCCL_PROFILER_PLUGIN, so the backend loads the
# shim as its plugin and the job is still traced, timed, its hang found
# and named, and ranks that chose different algorithms reported.  With
# the preload as well, each call is recorded once, with NCCL's choice.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
XLA="$NG_BUILD/tests/preload/xla_like"
EX="$NG_BUILD/bin/allreduce_example"
[ -x "$XLA" ] || fail "$XLA not built"

# ranks TAG N ARGS...: N ranks of xla_like without LD_PRELOAD, under run.
ranks() {
	tag=$1 n=$2; shift 2
	"$NG_BIN" run -o "$NG_TMP/$tag" --timeout 1 --on-timeout exit -- sh -c '
		n=$1 xla=$2 id=$3; shift 3
		r=0; while [ $r -lt "$n" ]; do
			RANK=$r WORLD_SIZE=$n env -u LD_PRELOAD ${ALGO_OF_1:+$( [ $r = 1 ] && echo NCCL_ALGO=$ALGO_OF_1)} \
				"$xla" "$id" "$@" &
			r=$((r + 1))
		done; wait' sh "$n" "$XLA" "$NG_TMP/$tag.id" "$@" >"$NG_TMP/$tag.out" 2>"$NG_TMP/$tag.err"
}
field() {	# field JSON PYEXPR: a value of report.json
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

note "the plugin ABI is exported"
nm -D --defined-only "$NG_LIB" | grep -q ' ncclProfiler_v5$' || fail "no ncclProfiler_v5"
nm -D --defined-only "$NG_LIB" | grep -q ' ncclProfiler_v4$' || fail "no ncclProfiler_v4"
nm -D --defined-only "$NG_LIB" | grep -q ' ncclProfiler_v3$' || fail "no ncclProfiler_v3"

note "plugin only: 3 ranks, 6 all-reduces, no LD_PRELOAD, no wrapper call"
ranks ok 3 6 4096 || { cat "$NG_TMP/ok.err"; fail "run failed"; }
assert_grep "seen only through NCCL's profiler plugin" "$NG_TMP/ok.err"
assert_eq "$(grep -c "seen only through" "$NG_TMP/ok.err")" 3 "one warning per process"
assert_eq "$(grep -c '6 calls done' "$NG_TMP/ok.out")" 3 "ranks done"
ng_trace_text "$NG_TMP/ok" "$NG_TMP/ok.txt"
assert_eq "$(grep -c 'ncclguard:coll_enqueue:' "$NG_TMP/ok.txt")" 18 "coll_enqueue events"
assert_eq "$(grep -c 'ncclguard:coll_complete:' "$NG_TMP/ok.txt")" 18 "coll_complete events"
# NCCL's choice once per comm, op and size in each process.
assert_eq "$(grep -c 'ncclguard:coll_algo: .*plugin_only = 1' "$NG_TMP/ok.txt")" 3 "coll_algo events"
assert_grep 'comm_init_end: .*kind = "plugin"' "$NG_TMP/ok.txt"
assert_grep 'process_info: .*rank = 2' "$NG_TMP/ok.txt"
J="$NG_TMP/ok/report.json"
assert_eq "$(field "$J" 'len(r["ranks"])')" 3 "ranks in the report"
assert_eq "$(field "$J" '[(c["op"], c["calls"], c["timed"], c["algo"], c["proto"], c["nchannels"]) for c in r["collectives"]]')" \
	"[('allreduce', 6, 6, 'RING', 'LL', 1)]" "collectives row"
assert_eq "$(field "$J" 'len(r["hangs"]) + len(r["algo_mismatches"])')" 0 "no findings"
assert_eq "$(field "$J" '[(f["kind"], f["ranks"]) for f in r["findings"]]')" "[('plugin_only', [0, 1, 2])]" "the note"
assert_grep "plugin only: ranks 0,1,2 made NCCL calls no wrapper saw" "$NG_TMP/ok.out"

note "plugin only: sends and receives in a ring, in groups"
XLA_RING=1 ranks ring 3 3 4096 || { cat "$NG_TMP/ring.err"; fail "run failed"; }
ng_trace_text "$NG_TMP/ring" "$NG_TMP/ring.txt"
assert_eq "$(grep -c 'ncclguard:coll_enqueue: .*seq = 0, p2p_seq = [1-6], op = "send"' "$NG_TMP/ring.txt")" 9 "send events"
assert_eq "$(grep -c 'ncclguard:coll_complete: .*op = "recv"' "$NG_TMP/ring.txt")" 9 "recv completions"
J="$NG_TMP/ring/report.json"
assert_eq "$(field "$J" 'sorted((c["op"], c["calls"], c["timed"]) for c in r["collectives"])')" \
	"[('allreduce', 3, 3), ('send', 9, 9)]" "collectives rows (a matched pair is one send)"
assert_eq "$(field "$J" 'len(r["hangs"]) + len(r["mismatches"])')" 0 "no findings"

note "plugin only: rank 1 never makes its 4th all-reduce; the others hang"
ranks hang 3 6 4096 1 4
assert_grep "rank 1: skipping call 4" "$NG_TMP/hang.err"
assert_grep "allreduce seq 4 on comm .* not complete after .*its kernel started and never ended (seen through NCCL's profiler plugin); action exit" "$NG_TMP/hang.err"
assert_eq "$(grep -c 'exiting with status 4' "$NG_TMP/hang.err")" 2 "ranks 0 and 2 exit"
J="$NG_TMP/hang/report.json"
assert_eq "$(field "$J" '[(h["op"], h["seq"], h["missing_ranks"]) for h in r["hangs"]]')" \
	"[('allreduce', 4, [1])]" "the hang and its missing rank"
assert_grep "rank 1 never entered it" "$NG_TMP/hang.out"

note "plugin only: rank 1 runs Tree where the others run Ring"
ALGO_OF_1=Tree ranks algo 3 4 4096 || { cat "$NG_TMP/algo.err"; fail "run failed"; }
J="$NG_TMP/algo/report.json"
assert_eq "$(field "$J" '[(m["op"], m["bytes"], sorted((k, v["algo"]) for k, v in m["by_rank"].items())) for m in r["algo_mismatches"]]')" \
	"[('allreduce', 4096, [('0', 'RING'), ('1', 'TREE'), ('2', 'RING')])]" "algo_mismatches"
assert_grep "algorithm mismatch: ranks of comm .* ran allreduce of 4 KiB differently" "$NG_TMP/algo.out"
"$NG_BIN" analyze "$NG_TMP/algo" --json "$NG_TMP/algo2.json" --fail-on mismatch >/dev/null 2>&1
assert_eq "$?" 5 "--fail-on mismatch"

note "plugin only, as NCCL 2.27 calls it: ncclProfiler_v4"
NCCLSIM_PROFILER_VERSION=4 ranks v4 3 6 4096 || { cat "$NG_TMP/v4.err"; fail "run failed"; }
J="$NG_TMP/v4/report.json"
assert_eq "$(field "$J" '[(c["op"], c["calls"], c["timed"], c["algo"], c["proto"], c["nchannels"]) for c in r["collectives"]]')" \
	"[('allreduce', 6, 6, 'RING', 'LL', 1)]" "v4 collectives row"
assert_eq "$(field "$J" '[(f["kind"], f["ranks"]) for f in r["findings"]]')" "[('plugin_only', [0, 1, 2])]" "v4 note"
XLA_RING=1 NCCLSIM_PROFILER_VERSION=4 ranks v4ring 3 3 4096 || { cat "$NG_TMP/v4ring.err"; fail "run failed"; }
assert_eq "$(field "$NG_TMP/v4ring/report.json" 'sorted((c["op"], c["calls"], c["timed"]) for c in r["collectives"])')" \
	"[('allreduce', 3, 3), ('send', 9, 9)]" "v4 ring rows"

note "plugin only, as NCCL 2.26 calls it: ncclProfiler_v3 (comm per event, no GPU timer)"
NCCLSIM_PROFILER_VERSION=3 ranks v3 3 6 4096 || { cat "$NG_TMP/v3.err"; fail "run failed"; }
ng_trace_text "$NG_TMP/v3" "$NG_TMP/v3.txt"
assert_eq "$(grep -c 'ncclguard:coll_enqueue:' "$NG_TMP/v3.txt")" 18 "v3 coll_enqueue events"
assert_eq "$(grep -c 'ncclguard:coll_complete:' "$NG_TMP/v3.txt")" 18 "v3 coll_complete events"
J="$NG_TMP/v3/report.json"
assert_eq "$(field "$J" '[(c["op"], c["calls"]) for c in r["collectives"]]')" "[('allreduce', 6)]" "v3 collectives row"
assert_eq "$(field "$J" '[(f["kind"], f["ranks"]) for f in r["findings"]]')" "[('plugin_only', [0, 1, 2])]" "v3 note"
assert_eq "$(field "$J" 'len(r["hangs"])')" 0 "v3 hangs"

note "an ABI the backend does not know is said"
NCCLSIM_PROFILER_VERSION=7 ranks badabi 2 2 4096
assert_grep "NCCLSIM_PROFILER_VERSION=7: not 3, 4, 5 or 6" "$NG_TMP/badabi.err"

note "preload and plugin: each call once, with NCCL's choice"
"$NG_BIN" run -o "$NG_TMP/both" -- "$EX" --launch 2 --iters 3 --warmup 0 --max-bytes 64K \
	>"$NG_TMP/both.out" 2>"$NG_TMP/both.err" || { cat "$NG_TMP/both.err"; fail "run failed"; }
assert_no_grep "seen only through" "$NG_TMP/both.err"
ng_trace_text "$NG_TMP/both" "$NG_TMP/both.txt"
enq=$(grep -c 'ncclguard:coll_enqueue:' "$NG_TMP/both.txt")
[ "$enq" -gt 0 ] || fail "no coll_enqueue"
algo=$(grep -c 'ncclguard:coll_algo: .*seq = 0, .*plugin_only = 0' "$NG_TMP/both.txt")
sizes=$(grep 'ncclguard:coll_enqueue:' "$NG_TMP/both.txt" | sed 's/.*vpid = \([0-9]*\),.* bytes = \([0-9]*\),.*/\1 \2/' | sort -u | wc -l)
assert_eq "$algo" "$sizes" "one coll_algo per process and size"
assert_no_grep 'kind = "plugin"' "$NG_TMP/both.txt"
assert_no_grep "plugin only" "$NG_TMP/both.out"
J="$NG_TMP/both/report.json"
assert_eq "$(field "$J" 'sum(c["calls"] for c in r["collectives"]) * 2')" "$enq" "calls counted once"
assert_eq "$(field "$J" 'sorted(set(c["algo"] for c in r["collectives"]))')" "['RING']" "algo in every row"

note "plugin only, one rank: NCCL tells a plugin nothing; said, not a silent empty report"
ranks one 1 4 4096 || { cat "$NG_TMP/one.err"; fail "run failed"; }
assert_eq "$(grep -c '4 calls done' "$NG_TMP/one.out")" 1 "the rank is done"
assert_grep "a 1-rank communicator seen only through NCCL's profiler plugin" "$NG_TMP/one.err"
J="$NG_TMP/one/report.json"
assert_eq "$(field "$J" '[i["what"] for i in r["incomplete"]]')" "['plugin_one_rank']" "incomplete[]"
assert_eq "$(field "$J" 'len(r["collectives"])')" 0 "no call pretended"

note "NCCL_PROFILER_PLUGIN=none is the user's choice"
NCCL_PROFILER_PLUGIN=none ranks none 2 2 4096 || { cat "$NG_TMP/none.err"; fail "run failed"; }
assert_no_grep "seen only through" "$NG_TMP/none.err"
echo "PASS profiler"
