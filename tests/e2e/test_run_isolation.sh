#!/bin/sh
# Two `ncclguard run` jobs of one user on one host at the same time (4 and
# 2 ranks on the CPU backend, each waiting at its start for the other):
# each trace holds its own job's ranks only, every event of a trace the
# same job tag (the two differ), process_info the job's id as its run
# record names it.  Without the session's job filter each trace held all
# 6 ranks.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=10 NCCLSIM_LATENCY_US=2000
unset NCCLGUARD_JOB SLURM_JOB_ID

# job NAME OTHER RANKS: a run that starts its ranks once OTHER's started.
job() {
	"$NG_BIN" run -o "$NG_TMP/$1" -- sh -c '
		touch "$1.up"
		i=0; while [ ! -e "$2.up" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
		shift 2; exec "$@"' sh "$NG_TMP/$1" "$NG_TMP/$2" \
		"$EXAMPLE" --launch "$3" --min-bytes 1K --max-bytes 1K --iters 500 --warmup 0 \
		>"$NG_TMP/$1.out" 2>"$NG_TMP/$1.err"
}

note "two jobs at once: A (NCCLGUARD_JOB=iso-a-$$, 4 ranks) and B (an id made by run, 2 ranks)"
NCCLGUARD_JOB=iso-a-$$ job a b 4 &
pa=$!
job b a 2 &
pb=$!
rc=0; wait $pa || rc=$?
assert_eq "$rc" 0 "exit status of job A"
rc=0; wait $pb || rc=$?
assert_eq "$rc" 0 "exit status of job B"
assert_eq "$(ng_run_field "$NG_TMP/a" job)" "\"iso-a-$$\"" "job A's id"
idb=$(ng_run_field "$NG_TMP/b" job | tr -d '"')
case "$idb" in *-[0-9]*-[0-9]*) ;; *) fail "job B's id '$idb' is not HOST-PID-TIME" ;; esac

for t in a:4:iso-a-$$ b:2:$idb; do
	name=${t%%:*}; rest=${t#*:}; n=${rest%%:*}; id=${rest#*:}
	ng_trace_text "$NG_TMP/$name" "$NG_TMP/$name.text"
	T="$NG_TMP/$name.text"
	note "job $name: $n ranks, one job tag, job_id $id"
	assert_eq "$(grep -c 'ncclguard:process_info:' "$T")" "$n" "process_info events in $name"
	assert_eq "$(sed -n 's/.* ncclguard:process_info: .*vpid = \([0-9]*\),.*/\1/p' "$T" | sort -u | wc -l)" \
		"$n" "ranks in $name"
	assert_eq "$(grep -c ' ncclguard:' "$T")" "$(grep -c ' ncclguard:.*{ job = 0x' "$T")" \
		"events of $name with a job field"
	sed -n 's/.*{ job = \(0x[0-9A-Fa-f]*\),.*/\1/p' "$T" | sort -u >"$NG_TMP/$name.tags"
	assert_eq "$(wc -l <"$NG_TMP/$name.tags")" 1 "job tags in $name"
	assert_eq "$(sed -n 's/.*ncclguard:process_info: .*job_id = "\([^"]*\)".*/\1/p' "$T" | sort -u)" \
		"$id" "job_id of the ranks in $name"
	vpids=$(sed -n 's/.* ncclguard:[a-z_]*: .*vpid = \([0-9]*\),.*/\1/p' "$T" | sort -u | wc -l)
	assert_eq "$vpids" "$n" "processes with events in $name"
done
cmp -s "$NG_TMP/a.tags" "$NG_TMP/b.tags" && fail "both jobs have the tag $(cat "$NG_TMP/a.tags")"
# They ran at the same time: each job's collectives overlapped the other's.
first() { grep -m1 ' ncclguard:coll_enqueue:' "$1" | sed 's/^\[\([0-9:.]*\)\].*/\1/'; }
last() { grep ' ncclguard:coll_complete:' "$1" | tail -n 1 | sed 's/^\[\([0-9:.]*\)\].*/\1/'; }
[ "$(first "$NG_TMP/a.text")" \< "$(last "$NG_TMP/b.text")" ] &&
	[ "$(first "$NG_TMP/b.text")" \< "$(last "$NG_TMP/a.text")" ] ||
	fail "the jobs did not overlap: A $(first "$NG_TMP/a.text")..$(last "$NG_TMP/a.text"), B $(first "$NG_TMP/b.text")..$(last "$NG_TMP/b.text")"
echo "ok"
