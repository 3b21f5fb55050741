# Sourced by the tests of `ncclguard watch` and of clocks across hosts:
# "hosts" as Linux namespaces on this machine, each with its own hostname
# (UTS) and its own /var/run/lttng (mount), so each runs a session daemon
# of its own and its traces carry its hostname; an lttng-relayd they
# stream to.  The network and /dev/shm stay shared: the CPU backend's
# ranks meet there as ranks on several hosts meet over the network.
#
#   ng_relayd_start DIR            an lttng-relayd on free ports of
#                                  127.0.0.1, writing under DIR; sets
#                                  NG_RELAY_URL (net://127.0.0.1:LIVE)
#   ng_host_up NAME                a host and its session daemon
#   ng_on NAME CMD...              CMD run on that host
#   ng_live_session NAME SESSION   a live session of `ncclguard:*` events
#                                  streaming to the relayd, started
#   ng_local_session NAME SESSION DIR   the same, recorded into DIR
#   ng_hang_job TAG JOBID [ENV...]  4 CPU-backend ranks that hang: 0-1 on
#                                  hosta, 2-3 on hostb, rank 3 leaves out
#                                  the last of 52 all-reduces
#   ng_until_grep PATTERN FILE PID  waits for PATTERN in FILE while PID runs
#   ng_until_gone PID FILE         waits for a watch to end once its
#                                  sessions did
#
# Everything started is killed on exit (NG_AT_EXIT, tracer/common.sh).
. "$NG_ROOT/tests/e2e/common.sh"

if [ "$NG_LTTNG_ISOLATED" != root ]; then
	echo "SKIP: hosts as namespaces need root with unshare"
	exit 0
fi
for c in unshare nsenter lttng-sessiond lttng-relayd lttng python3; do
	command -v "$c" >/dev/null || { echo "SKIP: $c not installed"; exit 0; }
done

NG_HOSTS=""
NG_RELAYD_PID=""

ng_hosts_down() {
	# `timeout` signals the script and then its process group: a second
	# signal must not cut the cleanup short
	trap '' HUP INT TERM
	for h in $NG_HOSTS; do
		k=$(cat "$NG_TMP/host.$h.keeper" 2>/dev/null) || continue
		# a destroy waits for the data to be sent: bounded
		timeout -k 2 10 nsenter -t "$k" -m -u -- env LTTNG_HOME="$NG_TMP/home.$h" \
			lttng destroy -a >/dev/null 2>&1
		# its pid as read when it started: the namespace may be gone
		p=$(cat "$NG_TMP/host.$h.sessiond.pid" 2>/dev/null)
		if [ -n "$p" ]; then
			kill "$p" 2>/dev/null
			i=0
			while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
				sleep 0.1; i=$((i + 1))
			done
			kill -9 "$p" 2>/dev/null
		fi
		kill "$k" 2>/dev/null
		rm -f "$NG_TMP/host.$h.keeper"
	done
	if [ -n "$NG_RELAYD_PID" ]; then
		kill "$NG_RELAYD_PID" 2>/dev/null
		i=0
		while kill -0 "$NG_RELAYD_PID" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1; i=$((i + 1))
		done
		kill -9 "$NG_RELAYD_PID" 2>/dev/null
		NG_RELAYD_PID=""
	fi
}
NG_AT_EXIT="ng_hosts_down; $NG_AT_EXIT"

# ng_free_ports N: N TCP ports of 127.0.0.1 nobody listens on now.
ng_free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

ng_relayd_start() {
	set -- "$1" $(ng_free_ports 3)
	NG_RELAY_CTRL=$2 NG_RELAY_DATA=$3 NG_RELAY_LIVE=$4
	lttng-relayd -o "$1" -C "tcp://127.0.0.1:$2" -D "tcp://127.0.0.1:$3" \
		-L "tcp://127.0.0.1:$4" >"$NG_TMP/relayd.log" 2>&1 &
	NG_RELAYD_PID=$!
	i=0
	until python3 -c "import socket; socket.create_connection(('127.0.0.1', $4), 1)" \
			2>/dev/null; do
		kill -0 "$NG_RELAYD_PID" 2>/dev/null || { cat "$NG_TMP/relayd.log"; fail "lttng-relayd died"; }
		[ $i -lt 100 ] || fail "lttng-relayd not listening after 10 s"
		sleep 0.1; i=$((i + 1))
	done
	NG_RELAY_URL="net://127.0.0.1:$4"
}

# In the test's folder: nsenter -m starts at /, where a rank's hang
# report (written to the working directory without `run`) would land.
ng_on() {
	_h=$1; shift
	nsenter -t "$(cat "$NG_TMP/host.$_h.keeper")" -m -u --wd="$NG_TMP" -- \
		env LTTNG_HOME="$NG_TMP/home.$_h" "$@"
}

ng_host_up() {
	mkdir -p "$NG_TMP/home.$1"
	# The keeper holds the namespaces; the session daemon lives in them.
	unshare -u -m sh -c 'mount -t tmpfs -o mode=0755 ng-host /var/run/lttng &&
		hostname "$1" && echo ready && exec sleep 100000' sh "$1" \
		>"$NG_TMP/host.$1.ready" 2>&1 &
	echo $! >"$NG_TMP/host.$1.keeper"
	NG_HOSTS="$NG_HOSTS $1"
	i=0
	until grep -q ready "$NG_TMP/host.$1.ready"; do
		[ $i -lt 50 ] || { cat "$NG_TMP/host.$1.ready"; fail "host $1 not up"; }
		sleep 0.1; i=$((i + 1))
	done
	ng_on "$1" lttng-sessiond --daemonize --no-kernel >"$NG_TMP/host.$1.sessiond" 2>&1 ||
		{ cat "$NG_TMP/host.$1.sessiond"; fail "no session daemon on host $1"; }
	ng_on "$1" cat /var/run/lttng/lttng-sessiond.pid >"$NG_TMP/host.$1.sessiond.pid" ||
		fail "no pid file of host $1's session daemon"
}

# The channel the shim's events need, in a session made by the caller.
ng_session_events() {
	ng_on "$1" lttng enable-channel -u ncclguard --buffers-uid --subbuf-size 1M \
		--num-subbuf 8 >/dev/null &&
	ng_on "$1" lttng enable-event -u -c ncclguard 'ncclguard:*' >/dev/null &&
	ng_on "$1" lttng add-context -u -c ncclguard -t vpid -t vtid -t procname >/dev/null &&
	ng_on "$1" lttng start >/dev/null
}

ng_live_session() {
	ng_on "$1" lttng create "$2" --live=1000000 \
		--set-url="net://127.0.0.1:$NG_RELAY_CTRL:$NG_RELAY_DATA" >/dev/null &&
	ng_session_events "$1" || fail "no live session on host $1"
}

ng_local_session() {
	ng_on "$1" lttng create "$2" --output="$3" >/dev/null &&
	ng_session_events "$1" || fail "no session on host $1"
}

# ng_rank HOST TAG RANK WORLD [ENV...] -- CMD...: one rank of a job on
# HOST in the background; out/err/rc in $NG_TMP/TAG.RANK.*, its pid in
# $NG_TMP/TAG.RANK.pid.
ng_rank() {
	_h=$1 _tag=$2 _r=$3 _n=$4; shift 4
	_envs=""
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do _envs="$_envs $1"; shift; done
	[ "${1:-}" = "--" ] && shift
	# shellcheck disable=SC2086
	( ng_on "$_h" env RANK=$_r WORLD_SIZE=$_n LOCAL_RANK=$_r $_envs "$@" \
		>"$NG_TMP/$_tag.$_r.out" 2>"$NG_TMP/$_tag.$_r.err"
	  echo $? >"$NG_TMP/$_tag.$_r.rc" ) &
	echo $! >"$NG_TMP/$_tag.$_r.pid"
}

# ng_hang_job TAG JOBID [ENV...]: 4 ranks, 0-1 on hosta, 2-3 on hostb, 52
# calls each (2 warmup + 50); rank 3 leaves out the 52nd.
NG_JOB_N=0
ng_hang_job() {
	_tag=$1 _job=$2; shift 2
	NG_JOB_N=$((NG_JOB_N + 1))
	for r in 0 1 2 3; do
		h=hosta; [ $r -ge 2 ] && h=hostb
		ng_rank $h "$_tag" $r 4 LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
			NCCLGUARD_JOB="$_job" NCCLSIM_LATENCY_US=20000 "$@" \
			-- "$NG_BUILD/bin/allreduce_example" --id-file "$NG_TMP/id.$NG_JOB_N" \
			--min-bytes 8 --max-bytes 8 --warmup 2 --iters 50 --skip-seq 52 --skip-rank 3
		NG_AT_EXIT="pkill -KILL -P $(cat "$NG_TMP/$_tag.$r.pid") 2>/dev/null; $NG_AT_EXIT"
	done
}

# ng_until_grep PATTERN FILE PID: wait (30 s at most) for PATTERN in FILE
# while PID runs.
ng_until_grep() {
	i=0
	until grep -q "$1" "$2"; do
		[ $i -lt 300 ] || { cat "$2"; fail "'$1' not within 30 s"; }
		kill -0 "$3" 2>/dev/null || { cat "$2"; fail "watch exited"; }
		sleep 0.1; i=$((i + 1))
	done
}

# ng_until_gone PID FILE: wait (15 s at most) for watch PID to end by
# itself, its sessions destroyed; FILE (its output) shown if it does not.
ng_until_gone() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		[ $i -lt 150 ] || { cat "$2"; fail "watch still running 15 s after the sessions ended"; }
		sleep 0.1; i=$((i + 1))
	done
}
