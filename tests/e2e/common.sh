# Sourced by the tracer tests instead of tests/lib.sh (it sources that).
#
# Each test gets its own LTTng: as root, the script re-runs itself in a
# private mount namespace with an empty /var/run/lttng, /dev/shm and
# /run/ncclguard (the runtime folder where runs meet), so
# `ncclguard run` starts a session daemon of its own there, whatever runs
# on the host; as a user, LTTNG_HOME points into the test's directory.
# Either way the daemon we started is killed on exit.  Where neither works
# (root without CAP_SYS_ADMIN), tests share the host's daemon: every count
# is then taken for our own process ids only, and tests that need "no
# daemon" skip.  NG_LTTNG_SHARED=1 asks for that shared mode.
#
# A test that sets NG_NETNS_HOST=NAME first also gets a network and UTS
# namespace of its own: hostname NAME, resolved (a private /etc/hosts) to
# 10.250.0.1 on one end of a veth pair (daemons that resolve their own
# name, such as Slurm's, ask for an address that is not loopback), so its
# daemons' ports and names meet nobody else's.  Where that fails, the
# test runs without it and must check `hostname` to skip.
ng_unshare_extra=${NG_NETNS_HOST:+-n -u}
if [ -z "${NG_LTTNG_ISOLATED:-}" ] && [ -z "${NG_LTTNG_SHARED:-}" ] && [ "$(id -u)" = 0 ] &&
   unshare -m $ng_unshare_extra true 2>/dev/null; then
	NG_NETNS_HOST=${NG_NETNS_HOST:-} NG_LTTNG_ISOLATED=root exec unshare -m $ng_unshare_extra sh -c '
		mkdir -p /var/run/lttng &&
		mount -t tmpfs -o mode=0755 ng-lttng /var/run/lttng &&
		mount -t tmpfs -o mode=1777 ng-shm /dev/shm &&
		mkdir -p -m 0700 /run/ncclguard &&
		mount -t tmpfs -o mode=0700 ng-run /run/ncclguard || exit 1
		# Without the network (no iproute2, no veth) the hostname
		# stays, and the test skips.
		if [ -n "${NG_NETNS_HOST:-}" ] && ip link set lo up 2>/dev/null &&
		   ip link add ng0 type veth peer name ng1 &&
		   ip addr add 10.250.0.1/24 dev ng0 && ip link set ng0 up && ip link set ng1 up; then
			h=$(mktemp) &&
			printf "127.0.0.1 localhost\n10.250.0.1 %s\n" "$NG_NETNS_HOST" >"$h" &&
			mount --bind "$h" /etc/hosts && rm -f "$h" &&
			hostname "$NG_NETNS_HOST" || exit 1
		fi
		exec sh "$@"' sh "$0" "$@"
fi
[ -n "${NG_LTTNG_ISOLATED:-}" ] || [ "$(id -u)" = 0 ] || NG_LTTNG_ISOLATED=user
NG_LTTNG_ISOLATED=${NG_LTTNG_ISOLATED:-}

. "$NG_ROOT/tests/lib.sh"

export LTTNG_HOME="$NG_TMP"
NG_TP_EMIT="$NG_BUILD/tests/tp_emit"
NG_TP_LIB="$NG_BUILD/lib/libncclguard-tp.so"
[ -x "$NG_TP_EMIT" ] || fail "$NG_TP_EMIT not built (make $NG_TP_EMIT)"
[ -f "$NG_TP_LIB" ] || fail "$NG_TP_LIB not built"
command -v babeltrace2 >/dev/null || fail "babeltrace2 not installed"

ng_sessiond_pidfile() {
	if [ "$(id -u)" = 0 ]; then
		echo /var/run/lttng/lttng-sessiond.pid
	else
		echo "$LTTNG_HOME/.lttng/lttng-sessiond.pid"
	fi
}

ng_sessiond_pid() {
	f=$(ng_sessiond_pidfile)
	[ -f "$f" ] || return 1
	p=$(cat "$f" 2>/dev/null) || return 1
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null && echo "$p"
}

NG_SESSIOND_BEFORE=$(ng_sessiond_pid || true)

# Kills the session daemon this test started (never one it found).
ng_lttng_cleanup() {
	p=$(ng_sessiond_pid || true)
	[ -n "$p" ] && [ "$p" != "$NG_SESSIOND_BEFORE" ] || return 0
	kill "$p" 2>/dev/null
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	kill -9 "$p" 2>/dev/null
	return 0
}
# NG_AT_EXIT: what a test adds to run first (unmount what it mounted).
NG_AT_EXIT=""
trap 'eval "$NG_AT_EXIT"; ng_lttng_cleanup; [ -n "${NG_KEEP:-}" ] && echo "kept $NG_TMP" || rm -rf "$NG_TMP"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

ng_need_no_sessiond() {
	if [ -z "$NG_LTTNG_ISOLATED" ]; then
		echo "SKIP: cannot isolate LTTng (root without unshare): $*"
		exit 0
	fi
}

# ng_rundir: the runtime folder `ncclguard run` picks (run/rundir.c).
ng_rundir() {
	if [ "$(id -u)" = 0 ]; then
		echo /run/ncclguard
	elif [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -d "$XDG_RUNTIME_DIR" ] && [ ! -L "$XDG_RUNTIME_DIR" ] &&
	     [ "$(stat -c %u:%a "$XDG_RUNTIME_DIR")" = "$(id -u):700" ]; then
		echo "$XDG_RUNTIME_DIR/ncclguard"
	else
		echo "/dev/shm/ncclguard-$(id -u)"
	fi
}

# ng_trace_text DIR OUT: babeltrace2's text of the trace in DIR.
ng_trace_text() {
	babeltrace2 "$1" >"$2" 2>"$2.err" || { cat "$2.err"; fail "babeltrace2 $1 failed"; }
}

# ng_count FILE EVENT PID: events of that name from that process.
ng_count() {
	grep -c "ncclguard:$2: .*vpid = $3," "$1" || true
}

# ng_emit_pid FILE: the pid tp_emit printed.
ng_emit_pid() {
	sed -n 's/^tp_emit pid=\([0-9]*\) .*/\1/p' "$1" | head -n 1
}

NG_EVENTS="process_info comm_init_begin comm_init_end comm_end coll_enqueue
coll_complete timeout policy inject callsite coll_algo comm_state signal_wait"

# ng_assert_all FILE PID N: exactly N of every event kind from PID.
ng_assert_all() {
	for ev in $NG_EVENTS; do
		assert_eq "$(ng_count "$1" "$ev" "$2")" "$3" "$ev events of pid $2"
	done
}

# ng_run_field DIR KEY: a field of the run record DIR/<host>/run.json, as
# written there (strings keep their quotes).
ng_run_field() {
	sed -n "s/^  \"$2\": \(.*\)\$/\1/p" "$1"/*/run.json | sed 's/,$//'
}
