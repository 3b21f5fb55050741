#!/bin/sh
# What watch cannot vouch for, it says:
#   - LTTng serves a live session to one viewer: a second watch says the
#     session is held by another viewer (a note, and a line in every
#     report) instead of "0 of 0 sessions open", and attaches once the
#     first viewer is gone; a watch of that session's own URL, refused
#     by the relayd (LTTNG_VIEWER_ATTACH_ALREADY), says the same;
#   - a relayd stopped (SIGSTOP) while watch reads a session: watch says
#     it is not answering and, once it is resumed, attaches again;
#   - a second session of the same host and name at the relay (anyone
#     who reaches a relay can add one): the host is marked, in text
#     (DOUBLED) and in --json (a note, "doubled_hosts").
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"

ng_relayd_start "$NG_TMP/relay"
ng_host_up hosta
S="ncclguard-v1-$$"
ng_live_session hosta "$S"

# watch_bg NAME ARGS...: watch in the background; its pid in $W.
watch_bg() {
	_n=$1; shift
	: >"$NG_TMP/$_n.out"
	"$NG_BIN" watch "$@" --every 1 >"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" &
	W=$!
	NG_AT_EXIT="kill $W 2>/dev/null; $NG_AT_EXIT"
}

# wait_for PATTERN FILE PID: PATTERN in FILE within 30 s while PID runs.
wait_for() {
	i=0
	until grep -q "$1" "$2"; do
		kill -0 "$3" 2>/dev/null || { cat "$2"; fail "watch ended before '$1'"; }
		[ $i -lt 300 ] || { cat "$2"; fail "'$1' not within 30 s"; }
		sleep 0.1; i=$((i + 1))
	done
}

# stop PID: SIGINT, status 0.
stop() {
	kill -INT "$1"
	rc=0; wait "$1" || rc=$?
	assert_eq "$rc" 0 "watch's status after SIGINT"
}

note "a session another viewer holds"
watch_bg a "$NG_RELAY_URL"
A=$W
wait_for "attached to .*/$S, host hosta" "$NG_TMP/a.out" $A
URL=$(sed -n "s/^ncclguard watch: attached to \([^,]*\), host hosta$/\1/p" "$NG_TMP/a.out")
watch_bg b "$NG_RELAY_URL"
B=$W
wait_for "is held by another live viewer" "$NG_TMP/b.out" $B
wait_for "^  1 session held by another live viewer (LTTng allows one): not shown$" "$NG_TMP/b.out" $B
assert_grep "^ncclguard watch: $URL, host hosta is held by another live viewer (LTTng serves a session to one viewer at a time)" "$NG_TMP/b.out"
assert_grep "0 of 1 session open" "$NG_TMP/b.out"

note "its own URL: the relayd refuses the attach (LTTNG_VIEWER_ATTACH_ALREADY)"
watch_bg o "$URL"
O=$W
wait_for "^ncclguard watch: $URL is held by another live viewer" "$NG_TMP/o.out" $O
assert_no_grep "already a viewer" "$NG_TMP/o.err"
stop $O

note "the first viewer gone, the second attaches"
stop $A
wait_for "attached to $URL, host hosta" "$NG_TMP/b.out" $B

note "a second session of the same host and name"
mkdir -p "$NG_TMP/home.twin"
unshare -u -m sh -c 'mount -t tmpfs -o mode=0755 ng-host /var/run/lttng &&
	hostname hosta && echo ready && exec sleep 100000' >"$NG_TMP/host.twin.ready" 2>&1 &
echo $! >"$NG_TMP/host.twin.keeper"
NG_HOSTS="$NG_HOSTS twin"
i=0
until grep -q ready "$NG_TMP/host.twin.ready"; do
	[ $i -lt 50 ] || { cat "$NG_TMP/host.twin.ready"; fail "twin not up"; }
	sleep 0.1; i=$((i + 1))
done
ng_on twin lttng-sessiond --daemonize --no-kernel >"$NG_TMP/twin.sessiond" 2>&1 ||
	{ cat "$NG_TMP/twin.sessiond"; fail "no session daemon for the twin"; }
ng_on twin cat /var/run/lttng/lttng-sessiond.pid >"$NG_TMP/host.twin.sessiond.pid"
ng_live_session twin "$S"
wait_for "^ncclguard watch: host hosta has two sessions named $S at the relay" "$NG_TMP/b.out" $B
wait_for "^  hosta  *two sessions of one name at the relay: ranks may be counted twice (DOUBLED)$" \
	"$NG_TMP/b.out" $B
watch_bg j "$NG_RELAY_URL" --json
J=$W
wait_for "\"note\": \"host hosta has two sessions named $S at the relay" "$NG_TMP/j.out" $J
wait_for '"type": "progress".*"doubled_hosts": \["hosta"\]' "$NG_TMP/j.out" $J
stop $J

note "the relayd stopped, then resumed: said, and the session attached again"
kill -STOP "$NG_RELAYD_PID"
NG_AT_EXIT="kill -CONT $NG_RELAYD_PID 2>/dev/null; $NG_AT_EXIT"
i=0
until grep -q "relay not answering for 10 s" "$NG_TMP/b.out"; do
	kill -0 $B 2>/dev/null || { cat "$NG_TMP/b.out"; fail "watch ended"; }
	[ $i -lt 600 ] || { cat "$NG_TMP/b.out"; fail "no 'relay not answering' within 60 s"; }
	sleep 0.1; i=$((i + 1))
done
kill -CONT "$NG_RELAYD_PID"
wait_for "attached again to .*/$S" "$NG_TMP/b.out" $B
stop $B
echo ok
