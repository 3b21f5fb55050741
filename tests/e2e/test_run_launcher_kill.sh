#!/bin/sh
# `ncclguard run` killed with SIGKILL mid-job: its guardian stops the job
# (every rank gone within seconds), stops and destroys the session (none
# left), the trace is readable and its run record says launcher_killed,
# nothing is left behind (guardian, flight folder), and a later job with
# the same job id does not write into the dead run's folder.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

# debug: each process names its pid on stderr.
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=10 NCCLSIM_LATENCY_US=2000 NCCLGUARD_LOG=debug
export NCCLGUARD_JOB=kill-$$

# running PID: the process exists and is not a zombie.
running() {
	s=$(sed -n 's/^[0-9]* (.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)
	[ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# On failure, take down what this test started (a broken guardian would not).
job_group=""
fail() {
	[ -n "${ng:-}" ] && kill -9 "$ng" 2>/dev/null
	[ -n "$job_group" ] && kill -KILL "-$job_group" 2>/dev/null
	echo "FAIL: $*" >&2
	exit 1
}

note "a 4-rank job that hangs (rank 3 skips its 20th call); its launcher is killed"
"$NG_BIN" run -o "$NG_TMP/dead" -- "$EXAMPLE" --launch 4 --min-bytes 1K --max-bytes 1K \
	--iters 50 --warmup 0 --skip-seq 20 --skip-rank 3 >"$NG_TMP/dead.out" 2>"$NG_TMP/dead.err" &
ng=$!
i=0
while [ "$(grep -c '^ncclguard\[rank [0-9]* pid [0-9]*\]' "$NG_TMP/dead.err")" -lt 4 ] && [ $i -lt 200 ]; do
	sleep 0.05; i=$((i + 1))
done
job_group=$(for p in /proc/[0-9]*; do
	[ "$(sed -n 's/^[0-9]* (.*) . \([0-9]*\) \([0-9]*\) .*/\1 \2/p' "$p/stat" 2>/dev/null)" = "$ng ${p#/proc/}" ] &&
		echo "${p#/proc/}"
done)
ranks=$(sed -n 's/^ncclguard\[rank \([0-9]\) pid \([0-9]*\)\].*/\2/p' "$NG_TMP/dead.err" | sort -u)
assert_eq "$(echo $ranks | wc -w)" 4 "ranks started"
guard=$(for p in /proc/[0-9]*; do
	[ "$(cat "$p/comm" 2>/dev/null)" = ncclguard-guard ] &&
		[ "$(sed -n 's/^[0-9]* (.*) . \([0-9]*\) .*/\1/p' "$p/stat")" = "$ng" ] && echo "${p#/proc/}"
done)
[ -n "$guard" ] || fail "no guardian process under ncclguard run (pid $ng, job group $job_group)"
flight=$(ls -d "$(ng_rundir)"/*-"$ng"-* 2>/dev/null)
[ -n "$flight" ] || fail "no flight folder of pid $ng"
sleep 1
t0=$(now_ms)
kill -9 "$ng"
for p in $ranks; do
	while running "$p" && [ $(( $(now_ms) - t0 )) -lt 15000 ]; do sleep 0.02; done
	running "$p" && fail "rank pid $p still running 15 s after the launcher's SIGKILL"
done
echo "ranks gone $(( $(now_ms) - t0 )) ms after the launcher's SIGKILL"
while running "$guard" && [ $(( $(now_ms) - t0 )) -lt 30000 ]; do sleep 0.05; done
running "$guard" && fail "the guardian (pid $guard) still runs"
echo "recording stopped $(( $(now_ms) - t0 )) ms after the launcher's SIGKILL"
wait "$ng" 2>/dev/null

note "no session left, the trace readable, the run record"
if lttng list 2>/dev/null | grep -q "ncclguard-$ng-"; then
	lttng list; fail "the session of ncclguard pid $ng still exists"
fi
assert_grep "the launcher (pid $ng) died" "$NG_TMP/dead.err"
assert_eq "$(ng_run_field "$NG_TMP/dead" status)" '"launcher_killed"' "run.json status"
assert_eq "$(ng_run_field "$NG_TMP/dead" job)" "\"kill-$$\"" "run.json job"
[ ! -e "$flight" ] || fail "flight folder $flight left behind"
ng_trace_text "$NG_TMP/dead" "$NG_TMP/dead.text"
assert_eq "$(grep -c 'ncclguard:process_info:' "$NG_TMP/dead.text")" 4 "process_info events"
for p in $ranks; do
	[ "$(ng_count "$NG_TMP/dead.text" coll_enqueue "$p")" -gt 0 ] || fail "no coll_enqueue of rank pid $p"
done
(cd "$NG_TMP/dead" && find . -type f -exec ls -l --time-style=+%s.%N {} + | sort) >"$NG_TMP/dead.files"
"$NG_BIN" analyze "$NG_TMP/dead" >"$NG_TMP/analyze.out" 2>&1 ||
	{ cat "$NG_TMP/analyze.out"; fail "ncclguard analyze of the dead run's trace failed"; }
# (analyze writes its reports into the folder: list the files again)
(cd "$NG_TMP/dead" && find . -type f -exec ls -l --time-style=+%s.%N {} + | sort) >"$NG_TMP/dead.files"

note "a later job of the same job id stays out of the dead run's folder"
rc=0
"$NG_BIN" run -o "$NG_TMP/later" -- "$EXAMPLE" --launch 2 --min-bytes 1K --max-bytes 1K \
	--iters 20 --warmup 0 >"$NG_TMP/later.out" 2>"$NG_TMP/later.err" || rc=$?
assert_eq "$rc" 0 "exit status of the later job"
(cd "$NG_TMP/dead" && find . -type f -exec ls -l --time-style=+%s.%N {} + | sort) >"$NG_TMP/dead.files2"
cmp -s "$NG_TMP/dead.files" "$NG_TMP/dead.files2" ||
	{ diff "$NG_TMP/dead.files" "$NG_TMP/dead.files2"; fail "the dead run's folder changed"; }
ng_trace_text "$NG_TMP/later" "$NG_TMP/later.text"
assert_eq "$(grep -c 'ncclguard:process_info:' "$NG_TMP/later.text")" 2 "process_info of the later job"
echo "ok"
