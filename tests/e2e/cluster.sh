# Sourced by the cluster tests (test_run_mpirun, test_run_srun,
# test_run_hosts) after common.sh: jobs of 4 ranks of the example under a
# real launcher, the sessions LTTng holds while they run, what analyze
# makes of their traces, and what is left when one task's run is killed.

NG_EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$NG_EXAMPLE" ] || fail "$NG_EXAMPLE not built"
export LD_LIBRARY_PATH="$NG_SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# 10 sizes of 8 B to 4 KiB, 5 + NG_ITERS calls each.
NG_ITERS=${NG_ITERS:-40}
NG_CALLS=$((5 + NG_ITERS))
NG_EX_ARGS="--min-bytes 8 --max-bytes 4096 --iters $NG_ITERS --warmup 5 --check"

# ng_skip REASON: the test cannot run here; said, never a silent pass.
ng_skip() {
	echo "SKIP: $*"
	exit 0
}

# ng_sessions_watch FILE [CMD-PREFIX...]: in the background, every 0.1 s,
# the names of the ncclguard sessions `lttng list` shows (through the
# prefix, e.g. nsenter into a host), appended to FILE; $! is its pid.
# A job's session may live less than a second, less than a look takes on
# a loaded machine: a test that counts sessions holds its tasks (NG_HOLD)
# until the watch has seen them (ng_release_when).
ng_sessions_watch() {
	_f=$1; shift
	( while :; do
		"$@" lttng list 2>/dev/null | sed -n 's/^ *[0-9]*) \(ncclguard-[^ ]*\) .*/\1/p' >>"$_f"
		sleep 0.1
	  done ) &
}

# ng_stop_pid PID: ends a background helper of ours.
ng_stop_pid() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null || true
}

# ng_sessions_of FILE JOB: how many distinct sessions of that job were seen.
ng_sessions_of() {
	sort -u "$1" | grep -c -- "-$2\$" || true
}

# ng_seen FILE N: FILE (of ng_sessions_watch) holds N distinct sessions
# or more.
ng_seen() {
	[ "$(sort -u "$1" 2>/dev/null | wc -l)" -ge "$2" ]
}

# ng_all_ok FILE: the 4 ranks of a job have checked their results.
ng_all_ok() {
	[ "$(grep -c 'check OK' "$1" 2>/dev/null)" = 4 ]
}

# ng_release_when FILE CONDITION: in the background, polls the shell
# CONDITION every 0.1 s, and once it holds (or after 240 s, so that
# nothing waits for ever: the counts then fail) creates FILE, which the
# tasks of a job started with NG_HOLD=FILE wait for.
ng_release_when() {
	( _i=0
	  until eval "$2" || [ $_i -ge 2400 ]; do sleep 0.1; _i=$((_i + 1)); done
	  touch "$1" ) &
}

# ng_job_of DIR: the job id in DIR's run records (one per host, all alike).
ng_job_of() {
	sed -n 's/^  "job": "\(.*\)",$/\1/p' "$1"/*/run.json | sort -u
}

# ng_check_report JSON NRANKS HOSTS: the report holds ranks 0..NRANKS-1
# once each, on HOSTS hosts, every collective of the example exactly
# NG_CALLS times, nothing incomplete and no other job.
ng_check_report() {
	python3 - "$1" "$2" "$3" "$NG_CALLS" <<'EOF' || fail "report $1"
import json, sys
path, n, hosts, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = json.load(open(path))
bad = []
ranks = sorted(x["rank"] for x in r["ranks"])
if ranks != list(range(n)):
    bad.append("ranks %s, expected 0..%d" % (ranks, n - 1))
if len({x["host"] for x in r["ranks"]}) != hosts:
    bad.append("hosts %s" % sorted({x["host"] for x in r["ranks"]}))
if r["incomplete"]:
    bad.append("incomplete %s" % r["incomplete"])
if r["other_job_events"]:
    bad.append("%d events of another job" % r["other_job_events"])
rows = [(c["op"], c["bytes"], c["calls"]) for c in r["collectives"]]
if len(rows) != 10 or any(c[2] != calls for c in rows):
    bad.append("collectives %s, expected 10 sizes of %d calls" % (rows, calls))
if r["hangs"] or r["mismatches"]:
    bad.append("hangs %s mismatches %s" % (r["hangs"], r["mismatches"]))
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
}

# ng_summary JSON: ranks (rank host) and collectives (op bytes calls), one
# per line, to compare two recordings of the same job.
ng_summary() {
	python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for x in sorted(r["ranks"], key=lambda x: x["rank"]):
    print("rank", x["rank"], x["host"])
for c in r["collectives"]:
    print(c["op"], c["bytes"], c["calls"])
EOF
}

# ng_no_job_folders: nothing left in the runtime folder of ours.
ng_no_job_folders() {
	_left=$(ls -d "$(ng_rundir)"/job-* 2>/dev/null || true)
	[ -z "$_left" ] || fail "job folders left behind: $_left"
}

# ng_wait_gone PATTERN SECONDS: waits until no process of ours matches.
ng_wait_gone() {
	_i=0
	while pgrep -f "$1" >/dev/null 2>&1 && [ $_i -lt $(($2 * 10)) ]; do
		sleep 0.1; _i=$((_i + 1))
	done
	! pgrep -f "$1" >/dev/null 2>&1 || { pgrep -af "$1"; fail "still running: $1"; }
}

# ng_calling: how many processes make collective calls (their flight
# ring files, under the runtime folder, have a ring handed out).
ng_calling() {
	_c=0
	for _f in "$(ng_rundir)"/*/*.ring; do
		[ -f "$_f" ] || continue
		# nrings: a u32 at byte 56 of the header (common/ringfile.h)
		_r=$(od -v -An -t u4 -j 56 -N 4 "$_f" 2>/dev/null | tr -d ' ')
		[ "${_r:-0}" -ge 1 ] 2>/dev/null && _c=$((_c + 1))
	done
	echo $_c
}

# ng_job NAME LAUNCHER [EXAMPLE-ARGS...]: in the background, LAUNCHER (a
# command line, split at blanks, that starts 4 tasks) runs
# `ncclguard run -o $NG_TMP/NAME -- example`; $NAME.out, .err, .rc.  With
# NG_HOLD set, each task then waits for that file before its run ends.
ng_job() {
	_n=$1; _l=$2; shift 2
	set -- "$NG_EXAMPLE" --id-file "$NG_TMP/$_n.id" $NG_EX_ARGS "$@"
	[ -z "${NG_HOLD:-}" ] || set -- sh "$NG_TMP/hold.sh" "$NG_HOLD" "$@"
	( rc=0
	  # shellcheck disable=SC2086
	  timeout 240 $_l "$NG_BIN" run -o "$NG_TMP/$_n" -- "$@" \
		>"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" || rc=$?
	  echo $rc >"$NG_TMP/$_n.rc" ) &
}
# hold.sh FILE CMD...: CMD, then waits for FILE; CMD's exit status.
cat >"$NG_TMP/hold.sh" <<'EOF'
f=$1; shift
"$@"
r=$?
while [ ! -e "$f" ]; do sleep 0.1; done
exit $r
EOF

# ng_wait_job NAME: until ng_job NAME has ended (at most 250 s).
ng_wait_job() {
	_i=0
	while [ ! -f "$NG_TMP/$1.rc" ] && [ $_i -lt 2500 ]; do sleep 0.1; _i=$((_i + 1)); done
	[ -f "$NG_TMP/$1.rc" ] || fail "job $1 did not end"
}

# ng_check_task_kill LAUNCHER: job k of LAUNCHER, long enough to be
# caught mid-run; once its 4 tasks have joined, one task's `ncclguard run`
# is SIGKILLed.  The launcher must fail, the one session of the job be
# gone, the run record say launcher_killed, and the trace still read with
# every rank and nothing of another job.
ng_check_task_kill() {
	: >"$NG_TMP/sessions.k"
	ng_sessions_watch "$NG_TMP/sessions.k"
	_w=$!
	ng_job k "$1" --iters 100000
	_i=0
	while [ "$(grep -c 'joins the recording' "$NG_TMP/k.err" 2>/dev/null)" != 3 ] &&
	      [ $_i -lt 600 ]; do
		sleep 0.1; _i=$((_i + 1))
	done
	# Every rank in the trace: all 4 making calls (on a loaded machine a
	# rank may take seconds to get there after its run joined).
	_i=0
	while [ "$(ng_calling)" -lt 4 ] && [ $_i -lt 1200 ]; do
		sleep 0.1; _i=$((_i + 1))
	done
	[ "$(ng_calling)" -ge 4 ] || { cat "$NG_TMP/k.err"; fail "job k's 4 ranks are not all making calls"; }
	_victim=""
	for _p in $(pgrep -f "run -o $NG_TMP/k -- " | sort -n); do
		# A launcher, not a guardian (which renames itself).
		[ "$(cat /proc/"$_p"/comm 2>/dev/null)" = ncclguard ] && { _victim=$_p; break; }
	done
	[ -n "$_victim" ] || { cat "$NG_TMP/k.err"; fail "no ncclguard run of job k"; }
	kill -KILL "$_victim"
	ng_wait_job k
	# Only job k's processes: the launcher's daemons may hold $NG_TMP too.
	ng_wait_gone "$NG_TMP/k[. ]" 60
	ng_stop_pid $_w
	[ "$(cat "$NG_TMP/k.rc")" != 0 ] || fail "${1%% *} exited 0 after a task was killed"
	_jk=$(ng_job_of "$NG_TMP/k")
	assert_eq "$(ng_sessions_of "$NG_TMP/sessions.k" "$_jk")" 1 "sessions of job k seen"
	assert_eq "$(lttng list 2>/dev/null | grep -c 'ncclguard-')" 0 "sessions left after the kill"
	ng_no_job_folders
	assert_eq "$(ng_run_field "$NG_TMP/k" status)" '"launcher_killed"' "run.json status of job k"
	assert_eq "$(ng_run_field "$NG_TMP/k" tasks)" 4 "run.json tasks of job k"
	_rc=0
	"$NG_BIN" analyze "$NG_TMP/k" --json "$NG_TMP/k.json" >"$NG_TMP/k.an" 2>&1 || _rc=$?
	[ $_rc = 0 ] || { cat "$NG_TMP/k.an"; fail "analyze job k: exit $_rc"; }
	python3 - "$NG_TMP/k.json" <<'EOF' || fail "report of job k"
import json, sys
r = json.load(open(sys.argv[1]))
ranks = sorted(x["rank"] for x in r["ranks"])
kinds = [i["what"] for i in r["incomplete"]]
assert ranks == [0, 1, 2, 3], ranks
assert "launcher_killed" in kinds, kinds
assert not r["other_job_events"], r["other_job_events"]
EOF
}
