#!/bin/sh
# srun -n 4 ncclguard run -- ...: a single-node Slurm of our own (munged,
# slurmctld and slurmd started here as root, in a network and UTS
# namespace of the test's, and stopped at exit) runs 4 tasks, each wrapped
# by ncclguard run: they share one session, every rank is in the trace
# once, and the session is gone after the last task, also when one task's
# ncclguard run is SIGKILLed mid-run.  Where a part cannot start here the
# test says SKIP and why.
NG_NETNS_HOST=ngnode
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
. "$NG_ROOT/tests/e2e/cluster.sh"

[ "$(id -u)" = 0 ] || ng_skip "Slurm's daemons are started as root"
[ "$(hostname)" = ngnode ] ||
	ng_skip "no network and UTS namespace for a private Slurm (unshare -n -u, iproute2's ip, veth)"
for c in munged slurmctld slurmd srun sinfo; do
	command -v $c >/dev/null || ng_skip "$c not installed (apt-get install slurm-wlm munge)"
done
[ -r /etc/munge/munge.key ] || ng_skip "no /etc/munge/munge.key (the munge package makes it)"

S="$NG_TMP/slurm"
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
chmod 700 "$S/munge"
cp /etc/munge/munge.key "$S/munge/key" && chmod 600 "$S/munge/key"

# Stopped at exit, whatever happens: slurmd first (it ends its steps).
ng_slurm_stop() {
	for pf in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/pid"; do
		p=$(cat "$pf" 2>/dev/null) || continue
		kill "$p" 2>/dev/null || continue
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$p" 2>/dev/null
	done
	return 0
}
NG_AT_EXIT="ng_slurm_stop; $NG_AT_EXIT"

munged --force --key-file="$S/munge/key" --socket="$S/munge/sock" --pid-file="$S/munge/pid" \
	--seed-file="$S/munge/seed" --log-file="$S/munge/log" 2>"$S/munged.err" ||
	ng_skip "munged does not start: $(cat "$S/munged.err" "$S/munge/log" 2>/dev/null | tail -n 3)"

cat >"$S/slurm.conf" <<EOF
ClusterName=ngtest
SlurmctldHost=ngnode
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=10
SlurmdParameters=config_overrides
NodeName=ngnode CPUs=4 State=UNKNOWN
PartitionName=ng Nodes=ngnode Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$S/slurm.conf"
slurmctld 2>"$S/slurmctld.err" ||
	ng_skip "slurmctld does not start: $(tail -n 3 "$S/slurmctld.err" "$S/log/slurmctld.log" 2>/dev/null)"
slurmd 2>"$S/slurmd.err" ||
	ng_skip "slurmd does not start: $(tail -n 3 "$S/slurmd.err" "$S/log/slurmd.log" 2>/dev/null)"
i=0
while [ "$(sinfo -h -o %T 2>/dev/null)" != idle ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] ||
	ng_skip "the Slurm node does not come up: $(sinfo -h 2>&1; tail -n 3 "$S/log/slurmctld.log" "$S/log/slurmd.log")"

note "srun -n 4: 4 tasks, each wrapped by ncclguard run"
ng_sessions_watch "$NG_TMP/sessions"
watcher=$!
# The tasks held, once the ranks are done, until the watch has seen the
# session.
ng_release_when "$NG_TMP/release" 'ng_all_ok "$NG_TMP/s.out" && ng_seen "$NG_TMP/sessions" 1'
NG_HOLD="$NG_TMP/release"
ng_job s "srun -n 4"
NG_HOLD=""
ng_wait_job s
ng_wait_gone "$NG_TMP/s[. ]" 30
ng_stop_pid $watcher
[ "$(cat "$NG_TMP/s.rc")" = 0 ] || { cat "$NG_TMP/s.err"; fail "srun: exit $(cat "$NG_TMP/s.rc")"; }
assert_eq "$(grep -c 'check OK' "$NG_TMP/s.out")" 4 "ranks that checked OK"
js=$(ng_job_of "$NG_TMP/s")
case "$js" in [0-9]*) ;; *) fail "job id '$js': not Slurm's" ;; esac
assert_eq "$(ng_sessions_of "$NG_TMP/sessions" "$js")" 1 "sessions of the job seen"
assert_eq "$(lttng list 2>/dev/null | grep -c 'ncclguard-')" 0 "sessions left"
ng_no_job_folders
assert_eq "$(find "$NG_TMP/s" -name metadata | wc -l)" 1 "traces"
assert_eq "$(ng_run_field "$NG_TMP/s" tasks)" 4 "run.json tasks"
assert_eq "$(ng_run_field "$NG_TMP/s" status)" '"finished"' "run.json status"
"$NG_BIN" analyze "$NG_TMP/s" --json "$NG_TMP/s.json" >"$NG_TMP/s.an" 2>&1 ||
	{ cat "$NG_TMP/s.an"; fail "analyze"; }
ng_check_report "$NG_TMP/s.json" 4 1

note "SIGKILL of one task's ncclguard run mid-run (srun -K ends the step)"
ng_check_task_kill "srun -n 4 -K"

echo "ok"
