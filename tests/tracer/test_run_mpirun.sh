#!/bin/sh
# mpirun starts one `ncclguard run` per task: the 4 tasks of a job on a
# host share one session (the first creates it, the last out stops and
# destroys it), two jobs at once never mix, every rank's events are in
# the trace once, and a task whose `ncclguard run` is SIGKILLed mid-run
# still leaves no session behind and a readable trace.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/tracer/common.sh"
. "$NG_ROOT/tests/tracer/cluster.sh"

command -v mpirun >/dev/null || ng_skip "mpirun not installed (apt-get install openmpi-bin)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No network fabric is needed to start tasks on this host.
export OMPI_MCA_btl=self OMPI_MCA_btl_base_warn_component_unused=0
MPIRUN="mpirun --oversubscribe -np 4"

# job NAME [EXAMPLE-ARGS...]: mpirun -np 4 ncclguard run -o $NG_TMP/NAME in
# the background; $NAME.out, .err, .rc.
job() {
	_n=$1; shift
	( rc=0
	  timeout 240 $MPIRUN "$NG_BIN" run -o "$NG_TMP/$_n" -- "$NG_EXAMPLE" \
		--id-file "$NG_TMP/$_n.id" $NG_EX_ARGS "$@" >"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" || rc=$?
	  echo $rc >"$NG_TMP/$_n.rc" ) &
}

wait_job() {
	_i=0
	while [ ! -f "$NG_TMP/$1.rc" ] && [ $_i -lt 2500 ]; do sleep 0.1; _i=$((_i + 1)); done
	[ -f "$NG_TMP/$1.rc" ] || fail "job $1 did not end"
}

note "two jobs of 4 tasks at once, each wrapped by ncclguard run"
ng_sessions_watch "$NG_TMP/sessions"
watcher=$!
job a
job b
wait_job a
wait_job b
ng_stop_pid $watcher
for j in a b; do
	[ "$(cat "$NG_TMP/$j.rc")" = 0 ] || { cat "$NG_TMP/$j.err"; fail "job $j: exit $(cat "$NG_TMP/$j.rc")"; }
	assert_eq "$(grep -c 'check OK' "$NG_TMP/$j.out")" 4 "ranks of job $j that checked OK"
done
ng_wait_gone "$NG_TMP" 30
ja=$(ng_job_of "$NG_TMP/a")
jb=$(ng_job_of "$NG_TMP/b")
case "$ja" in mpirun-*) ;; *) fail "job a's id '$ja': not mpirun's" ;; esac
[ "$ja" != "$jb" ] || fail "two mpirun jobs got the same id $ja"

note "one session per job on this host, stopped and destroyed at the end"
assert_eq "$(ng_sessions_of "$NG_TMP/sessions" "$ja")" 1 "sessions of job a seen"
assert_eq "$(ng_sessions_of "$NG_TMP/sessions" "$jb")" 1 "sessions of job b seen"
assert_eq "$(lttng list 2>/dev/null | grep -c 'ncclguard-')" 0 "sessions left"
ng_no_job_folders
for j in a b; do
	assert_eq "$(find "$NG_TMP/$j" -name metadata | wc -l)" 1 "traces of job $j"
	assert_eq "$(ng_run_field "$NG_TMP/$j" tasks)" 4 "run.json tasks of job $j"
	assert_eq "$(ng_run_field "$NG_TMP/$j" status)" '"finished"' "run.json status of job $j"
	assert_eq "$(grep -c 'joins the recording' "$NG_TMP/$j.err")" 3 "runs of job $j that joined"
	# The summary, once: by the last out.
	assert_eq "$(grep -c '^ncclguard analyze: ' "$NG_TMP/$j.out")" 1 "summaries of job $j"
done

note "every rank once, every call once, no other job"
for j in a b; do
	"$NG_BIN" analyze "$NG_TMP/$j" --json "$NG_TMP/$j.json" >"$NG_TMP/$j.an" 2>&1 ||
		{ cat "$NG_TMP/$j.an"; fail "analyze job $j"; }
	ng_check_report "$NG_TMP/$j.json" 4 1
done

note "SIGKILL of one task's ncclguard run mid-run"
: >"$NG_TMP/sessions.k"
ng_sessions_watch "$NG_TMP/sessions.k"
watcher=$!
job k --iters 100000
# Once all 4 have joined and calls flow, kill the run of one task.
i=0
while [ "$(grep -c 'joins the recording' "$NG_TMP/k.err" 2>/dev/null)" != 3 ] && [ $i -lt 600 ]; do
	sleep 0.1; i=$((i + 1))
done
sleep 1
victim=""
for p in $(pgrep -f "run -o $NG_TMP/k -- " | sort -n); do
	# A launcher, not a guardian (which renames itself).
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = ncclguard ] && { victim=$p; break; }
done
[ -n "$victim" ] || { cat "$NG_TMP/k.err"; fail "no ncclguard run of job k"; }
kill -KILL "$victim"
wait_job k
ng_wait_gone "$NG_TMP" 60
ng_stop_pid $watcher
[ "$(cat "$NG_TMP/k.rc")" != 0 ] || fail "mpirun exited 0 after a task was killed"
jk=$(ng_job_of "$NG_TMP/k")
assert_eq "$(ng_sessions_of "$NG_TMP/sessions.k" "$jk")" 1 "sessions of job k seen"
assert_eq "$(lttng list 2>/dev/null | grep -c 'ncclguard-')" 0 "sessions left after the kill"
ng_no_job_folders
assert_eq "$(ng_run_field "$NG_TMP/k" status)" '"launcher_killed"' "run.json status of job k"
assert_eq "$(ng_run_field "$NG_TMP/k" tasks)" 4 "run.json tasks of job k"
rc=0
"$NG_BIN" analyze "$NG_TMP/k" --json "$NG_TMP/k.json" >"$NG_TMP/k.an" 2>&1 || rc=$?
[ $rc = 0 ] || { cat "$NG_TMP/k.an"; fail "analyze job k: exit $rc"; }
python3 - "$NG_TMP/k.json" <<'EOF' || fail "report of job k"
import json, sys
r = json.load(open(sys.argv[1]))
ranks = sorted(x["rank"] for x in r["ranks"])
kinds = [i["what"] for i in r["incomplete"]]
assert ranks == [0, 1, 2, 3], ranks
assert "launcher_killed" in kinds, kinds
assert not r["other_job_events"], r["other_job_events"]
EOF

echo "ok"
