#!/bin/sh
# `make demo-cluster`: ncclguard on a cluster, all on this machine.
#
# Three hosts as Linux namespaces, each with its own network, hostname and
# /var/run/lttng (so its own LTTng session daemon), linked to host-a by
# veth pairs and reached only at their addresses in there.  On host-a
# `ncclguard relay`; on host-b `ncclguard watch` attached to it; a job of
# 6 ranks of the all-reduce example on the CPU backend, 2 per host, each
# host's ranks wrapped by `ncclguard run --relay` as a torchrun would be.
# Rank 4 (host-c) is made to stall before all-reduce seq 70 (STALL_SEQ): it never
# joins it and the others wait.  watch names the missing rank while the
# job runs; the ranks' watchdogs then end the job; `ncclguard analyze` of
# the relay's output and the runs' -o folder names it afterwards.
#
#   tools/demo_cluster.sh [BUILD]     (NG_DEMO_DIR: the work folder,
#                                      default BUILD/demo-cluster)
#
# Needs root (namespaces); a missing part is named, with exit status 1.
# Everything it starts is stopped when it ends, on failure or ^C too: every
# process in the hosts' namespaces.  The whole demo runs in a mount
# namespace of its own with a private /dev/shm (where the CPU backend's
# ranks meet and `ncclguard run` keeps its job folders), gone with it.
# For the test, W/state holds what it saw: the hosts' network namespaces,
# the ranks alive when watch named the missing one, the exit statuses.
set -u
# Root first: without it nothing else matters, and a user who cannot read
# the build folder must not be told to run make.
if [ -z "${NG_DEMO_INNER:-}" ] && [ "$(id -u)" != 0 ]; then
	echo "demo-cluster: needs root: its hosts are Linux namespaces (network, UTS, mount); run: sudo make demo-cluster" >&2
	exit 1
fi
if ! B=$(cd "${1:-build}" 2>/dev/null && pwd); then
	echo "demo-cluster: no build folder '${1:-build}': run make first" >&2
	exit 1
fi
W=${NG_DEMO_DIR:-$B/demo-cluster}
NG="$B/bin/ncclguard"
EX="$B/bin/allreduce_example"
HOSTS="host-a host-b host-c"
RELAY_PORT=7342		# control; data 7343, live 7344
ID_PORT=29500		# rank 0's unique id, as MASTER_PORT
STALL_SEQ=70
STUCK_S=3
TIMEOUT_S=10

die() {
	echo "demo-cluster: $*" >&2
	exit 1
}

if [ -z "${NG_DEMO_INNER:-}" ]; then
	missing=""
	for c in bash:bash unshare:util-linux nsenter:util-linux ip:iproute2 lttng:lttng-tools \
		 lttng-sessiond:lttng-tools lttng-relayd:lttng-tools babeltrace2:babeltrace2; do
		command -v "${c%%:*}" >/dev/null 2>&1 || missing="$missing ${c%%:*} (Debian: ${c#*:});"
	done
	for f in "$NG" "$EX" "$B/sim/libnccl.so.2" "$B/lib/libncclguard.so"; do
		[ -e "$f" ] || missing="$missing $f (make);"
	done
	[ -z "$missing" ] || die "cannot run, missing:${missing%;}"
	err=$(unshare -n -u -m true 2>&1) ||
		die "cannot make namespaces here (unshare -n -u -m: $err); a container needs CAP_SYS_ADMIN"
	NG_DEMO_INNER=1 exec unshare -m sh -c \
		'mount -t tmpfs -o mode=1777 ng-demo-shm /dev/shm || exit 1; exec sh "$0" "$@"' "$0" "$B"
	die "cannot enter a mount namespace of its own"
fi

rm -rf "$W"
mkdir -p "$W" || die "cannot make $W"
STATE="$W/state"
: >"$STATE"
T0=$(date +%s)
JOB=demo-$T0
say() { printf '%s\n' "$*"; }
el() { echo $(($(date +%s) - T0)); }

# in_host HOST CMD...: CMD on that host (its network, hostname, mounts).
in_host() {
	_h=$1; shift
	nsenter -t "$(cat "$W/$_h.pid")" -n -u -m -- env LTTNG_HOME="$W/home.$_h" "$@"
}

# bg_in_host HOST CMD... &: the same in the background, CMD's pid in $!
# (the subshell that `&` makes becomes CMD).
bg_in_host() {
	_h=$1; shift
	exec nsenter -t "$(cat "$W/$_h.pid")" -n -u -m -- env LTTNG_HOME="$W/home.$_h" "$@"
}

# alive PID: running (an exited child of ours not yet waited for is not).
alive() {
	[ -n "$1" ] && [ -r "/proc/$1/status" ] &&
		! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# The processes of the hosts' networks: ranks, runs and their guardians,
# session daemons, the relay, watch, the namespaces' keepers.
in_hosts_pids() {
	sed -n 's/^netns=\(.*\)$/ \1/p' "$STATE" >"$W/netns"
	[ -s "$W/netns" ] || return 0
	# one ls for all: a readlink per process costs seconds on a busy host
	ls -l /proc/[0-9]*/ns/net 2>/dev/null |
		sed -n 's|.* /proc/\([0-9]*\)/ns/net -> \(.*\)$|\1 \2|p' |
		grep -F -f "$W/netns" | cut -d' ' -f1
}

# stop_all: the job and watch first (a run stops its command and its
# session when signalled), then whatever is left in the hosts, and the
# hosts' keepers (also one whose namespace was not noted yet).  Each
# step bounded: TERM, up to 5 s, KILL.
stop_all() {
	trap '' INT TERM HUP
	for pids in "$(cat "$W"/run.*.ngpid "$W/watch.pid" 2>/dev/null)" in_hosts \
		    "$(cat "$W"/host-*.pid 2>/dev/null)"; do
		for sig in TERM KILL; do
			[ "$pids" != in_hosts ] || pids=$(in_hosts_pids)
			left=""
			for p in $pids; do alive "$p" && kill -$sig "$p" 2>/dev/null && left="$left $p"; done
			i=0
			while [ -n "$left" ] && [ $i -lt 50 ]; do
				sleep 0.1; i=$((i + 1))
				l2=""
				for p in $left; do alive "$p" && l2="$l2 $p"; done
				left=$l2
			done
			[ -n "$left" ] || break
			pids=$left
		done
	done
	left=$(in_hosts_pids)
	[ -z "$left" ] || echo "demo-cluster: still running in the hosts: $left" >&2
}
on_exit() {
	rc=$?
	stop_all
	[ $rc = 0 ] || echo "demo-cluster: failed (status $rc); its files are in $W" >&2
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

say "== ncclguard on a cluster, on this machine (work folder $W)"
say
say "== 1. Three hosts: Linux namespaces with their own network, hostname and LTTng"
say "      session daemon, linked to host-a (the head node) by veth pairs:"
say "      host-a 10.252.0.1, host-b 10.252.0.2, host-c 10.252.0.3"
printf '127.0.0.1 localhost\n10.252.0.1 host-a\n10.252.0.2 host-b\n10.252.0.3 host-c\n' >"$W/hosts"
for h in $HOSTS; do
	mkdir -p "$W/home.$h"
	unshare -n -u -m --fork sh -c "
		hostname $h && mount --bind '$W/hosts' /etc/hosts &&
		mount -t tmpfs -o mode=0755 ng-lttng /var/run/lttng && ip link set lo up || exit 1
		echo \$\$ >'$W/$h.pid.tmp' && mv '$W/$h.pid.tmp' '$W/$h.pid'
		exec sleep 600" 2>"$W/$h.unshare" &
done
for h in $HOSTS; do
	i=0
	while [ ! -s "$W/$h.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$W/$h.pid" ] || die "cannot make host $h: $(cat "$W/$h.unshare")"
	echo "netns=$(readlink "/proc/$(cat "$W/$h.pid")/ns/net")" >>"$STATE"
done
PA=$(cat "$W/host-a.pid")
n=2
for h in host-b host-c; do
	ip link add "ng-$h" netns "$PA" type veth peer name ng0 netns "$(cat "$W/$h.pid")" \
		2>"$W/veth.err" || die "no veth pair between namespaces: $(cat "$W/veth.err")"
	nsenter -t "$PA" -n sh -c "ip addr add 10.252.0.1 peer 10.252.0.$n dev ng-$h &&
		ip link set ng-$h up" || die "host-a's address towards $h"
	in_host "$h" sh -c "ip addr add 10.252.0.$n peer 10.252.0.1 dev ng0 && ip link set ng0 up" ||
		die "$h's address"
	n=$((n + 1))
done
for h in $HOSTS; do
	[ "$(in_host "$h" hostname)" = "$h" ] || die "$h's hostname"
done

say
say "== 2. On host-a, a relay receives every host's trace (lttng-relayd; ports 7342-7344):"
say "      host-a\$ ncclguard relay -o RDIR --port $RELAY_PORT --bind 10.252.0.1"
bg_in_host host-a "$NG" relay -o "$W/RDIR" --port $RELAY_PORT --bind 10.252.0.1 \
	>"$W/relay.out" 2>"$W/relay.err" &
echo $! >"$W/relay.pid"
i=0
until in_host host-c bash -c "exec 3<>/dev/tcp/10.252.0.1/$RELAY_PORT" 2>/dev/null; do
	alive "$(cat "$W/relay.pid")" || die "the relay did not start: $(cat "$W/relay.err")"
	[ $i -lt 100 ] || die "the relay does not listen after 10 s: $(cat "$W/relay.err")"
	sleep 0.1; i=$((i + 1))
done

say
say "== 3. On host-b, watch attaches to the relay's live port (7344) before the job starts."
say "      Every 2 s it prints each host's ranks: \"at seq N\", the last collective a rank"
say "      entered (NCCL calls return before the work is done, so it runs ahead), \"done M\","
say "      the last seen complete. A collective some ranks entered and others did not, for"
say "      longer than --stuck ($STUCK_S s here; the default is 60), is a hang:"
say "      host-b\$ ncclguard watch net://host-a:7344 --stuck $STUCK_S --every 2"
bg_in_host host-b "$NG" watch net://host-a:$((RELAY_PORT + 2)) --stuck $STUCK_S --every 2 \
	>"$W/watch.txt" 2>"$W/watch.err" &
echo $! >"$W/watch.pid"

say
say "== 4. The job: 6 ranks of the all-reduce example on the CPU backend, 2 per host,"
say "      rank 0 on host-a handing out NCCL's unique id over TCP. Each host wraps its"
say "      ranks in ncclguard run, streaming to the relay (a live session per host);"
say "      -o names where run.json, flight rings and hang dumps go: the relay's folder,"
say "      which all hosts share here. The job id must be the same on every host (srun"
say "      and mpirun give one; a torchrun per host does not: NCCLGUARD_JOB)."
say "      Rank 4, on host-c, is made to stall before all-reduce seq $STALL_SEQ (--inject):"
say "      it never joins that collective, and the other five wait in it. Their"
say "      watchdogs (--timeout $TIMEOUT_S --on-timeout exit) end the job $TIMEOUT_S s later."
say "      host-X\$ NCCLGUARD_JOB=$JOB ncclguard run --relay net://host-a:$RELAY_PORT -o RDIR \\"
say "                 --timeout $TIMEOUT_S --on-timeout exit \\"
say "                 --inject 'stall:rank=4,op=allreduce,seq=$STALL_SEQ' -- <this host's 2 ranks>"
# A host's two ranks, as torchrun would start them; they wait for watch
# to attach to every host's session, since a live viewer sees only what
# comes after it attached (each rank says who it is when it starts).
cat >"$W/ranks.sh" <<EOF
#!/bin/sh
i=0
while [ ! -e "$W/go" ]; do
	[ \$i -lt 600 ] || exit 1
	sleep 0.1; i=\$((i + 1))
done
for r in \$1 \$((\$1 + 1)); do
	RANK=\$r LOCAL_RANK=\$((r - \$1)) WORLD_SIZE=6 NCCLSIM_LATENCY_US=50000 \\
		LD_LIBRARY_PATH="$B/sim" "$EX" --id-tcp 10.252.0.1:$ID_PORT \\
		--min-bytes 8 --max-bytes 1K --warmup 0 --iters 20 >"$W/rank.\$r.log" 2>&1 &
	echo \$! >"$W/rank.\$r.pid"
done
rc=0
for r in \$1 \$((\$1 + 1)); do wait "\$(cat "$W/rank.\$r.pid")" || rc=\$?; done
exit \$rc
EOF
first=0
for h in $HOSTS; do
	( bg_in_host "$h" env NCCLGUARD_JOB="$JOB" "$NG" run --relay net://10.252.0.1:$RELAY_PORT -o "$W/RDIR" \
		--timeout $TIMEOUT_S --on-timeout exit --inject "stall:rank=4,op=allreduce,seq=$STALL_SEQ" \
		-- sh "$W/ranks.sh" $first >"$W/run.$h.out" 2>"$W/run.$h.err" &
	  echo $! >"$W/run.$h.ngpid"
	  wait $!
	  echo $? >"$W/run.$h.rc" ) 2>"$W/run.$h.wrapper" &
	first=$((first + 2))
done

# show_watch: watch's lines so far that were not shown yet.
SHOWN=0
show_watch() {
	n=$(wc -l <"$W/watch.txt")
	[ "$n" -gt $SHOWN ] || return 0
	sed -n "$((SHOWN + 1)),${n}p" "$W/watch.txt" | sed 's/^/   | /'
	SHOWN=$n
}
watch_alive() {
	alive "$(cat "$W/watch.pid")" ||
		{ show_watch; die "watch ended early: $(cat "$W/watch.err")"; }
}
i=0
until [ "$(grep -c 'attached to .*host host-' "$W/watch.txt")" -ge 3 ]; do
	watch_alive
	[ $i -lt 300 ] || die "watch did not attach to the 3 hosts' sessions in 30 s"
	sleep 0.1; i=$((i + 1))
done
say "   watch's output, live; the ranks start once it has attached to the 3 sessions:"
show_watch
touch "$W/go"
i=0
until grep -q '^  HANG' "$W/watch.txt"; do
	watch_alive
	show_watch
	[ $i -lt 600 ] || die "watch reported no hang in 60 s"
	sleep 0.1; i=$((i + 1))
done
alive=0
for r in 0 1 2 3 4 5; do
	alive "$(cat "$W/rank.$r.pid" 2>/dev/null)" && alive=$((alive + 1))
done
echo "alive_at_hang=$alive" >>"$STATE"
sleep 0.3
show_watch
say
say "== 5. While the job still runs ($alive of its 6 ranks alive), watch names the"
say "      collective, the 5 ranks waiting in it and the one missing, with its host:"
grep -m1 '^  HANG' "$W/watch.txt" | sed 's/^  */      /'

say
say "== 6. The watchdogs end the job; each host's run, and then watch, report it:"
i=0
for h in $HOSTS; do
	while [ ! -f "$W/run.$h.rc" ]; do
		[ $i -lt 600 ] || die "the job still runs 60 s after the hang"
		sleep 0.1; i=$((i + 1))
	done
done
for h in $HOSTS; do
	rc=$(cat "$W/run.$h.rc")
	echo "run_rc.$h=$rc" >>"$STATE"
	say "      $h: ncclguard run exit status $rc (4: a watchdog ended a rank)"
done
grep -h -m1 'rank 0 .*not complete after' "$W"/rank.*.log "$W"/run.*.err 2>/dev/null |
	head -n 1 | cut -c1-150 | sed 's/^/      /'
i=0
while alive "$(cat "$W/watch.pid")"; do
	[ $i -lt 200 ] || die "watch still runs 20 s after the job's sessions ended"
	sleep 0.1; i=$((i + 1))
done
wait "$(cat "$W/watch.pid")"
wrc=$?
echo "watch_rc=$wrc" >>"$STATE"
say "      watch on host-b: \"$(tail -n 1 "$W/watch.txt" | sed 's/^ncclguard watch: //')\","
say "      exit status $wrc (5: a hang was reported)"
kill "$(cat "$W/relay.pid")" 2>/dev/null
wait "$(cat "$W/relay.pid")" 2>/dev/null

say
say "== 7. Afterwards, analyze reads the relay's folder: each host's trace, and beside"
say "      it what the host's run wrote there (-o: run.json, flight rings, hang dumps)."
say "      --fail-on hang makes it exit 5 on a hang, as a CI job would:"
say "      host-a\$ ncclguard analyze RDIR --fail-on hang"
"$NG" analyze "$W/RDIR" --fail-on hang --json "$W/report.json" >"$W/analyze.txt" 2>&1
arc=$?
echo "analyze_rc=$arc" >>"$STATE"
[ $arc = 0 ] || [ $arc = 5 ] || die "analyze failed (status $arc): $(tail -n 5 "$W/analyze.txt")"
# Its summary and findings: the lines before the table of collectives.
sed -n '/^Collectives/q;p' "$W/analyze.txt" | sed 's/^/   | /'
say "      analyze: exit status $arc (5: a hang was found). The three hosts share this"
say "      machine's clock: the offsets it estimated are its error here."

stop_all
say
say "== 8. Stopped: the relay, watch, the three session daemons and the hosts; no"
say "      process is left in their namespaces. Everything is under $W:"
say "      watch.txt, analyze.txt, report.json, RDIR/<host>/ (each host's trace and files)."
