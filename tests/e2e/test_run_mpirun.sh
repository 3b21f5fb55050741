#!/bin/sh
# mpirun starts one `ncclguard run` per task: the 4 tasks of a job on a
# host share one session (the first creates it, the last out stops and
# destroys it), two jobs at once never mix, every rank's events are in
# the trace once, and a task whose `ncclguard run` is SIGKILLed mid-run
# still leaves no session behind and a readable trace.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
. "$NG_ROOT/tests/e2e/cluster.sh"

command -v mpirun >/dev/null || ng_skip "mpirun not installed (apt-get install openmpi-bin)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No network fabric is needed to start tasks on this host.
export OMPI_MCA_btl=self OMPI_MCA_btl_base_warn_component_unused=0
MPIRUN="mpirun --oversubscribe -np 4"

note "two jobs of 4 tasks at once, each wrapped by ncclguard run"
ng_sessions_watch "$NG_TMP/sessions"
watcher=$!
# Their tasks held, once the ranks are done, until the watch has seen the
# two sessions.
ng_release_when "$NG_TMP/release" \
	'ng_all_ok "$NG_TMP/a.out" && ng_all_ok "$NG_TMP/b.out" && ng_seen "$NG_TMP/sessions" 2'
NG_HOLD="$NG_TMP/release"
ng_job a "$MPIRUN"
ng_job b "$MPIRUN"
NG_HOLD=""
ng_wait_job a
ng_wait_job b
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
ng_check_task_kill "$MPIRUN"

echo "ok"
