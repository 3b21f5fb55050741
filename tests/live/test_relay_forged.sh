#!/bin/sh
# A relay takes sessions from whoever reaches it: `analyze RELAYDIR DIR`
# reads only the sessions the job's run records name.  A 2-rank job on
# hosta streams through `ncclguard run --relay` (as root); a forger,
# another user (uid 1001, through setpriv; root where setpriv is
# missing or uid 1001 cannot reach the build) on a host that calls
# itself hosta, streams a session of its own session daemon to the relay
# on loopback, with ranks 0-1 of the same job id:
#   - named otherwise (ncclguard-<pid>-<time>-<job>): the report holds
#     ranks 0-1 once each, one pid each, and incomplete[] says
#     session_unverified, naming the forged session;
#   - named as the job's own session: two sessions of one host and name,
#     both left out, said in incomplete[] (here nothing else is left:
#     analyze says so and fails).
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

ng_relayd_start "$NG_TMP/relay"
ng_host_up hosta
RELAY="net://127.0.0.1:$NG_RELAY_CTRL:$NG_RELAY_DATA"

# The forger: a host of its own (UTS, /var/run/lttng) whose name is hosta
# too, as a session daemon's hostname is its own say, and uid 1001's
# session daemon there.
mkdir -p "$NG_TMP/home.forger"
IDDIR=$NG_TMP
AS=""
U=1001
# uid 1001 must reach the example and the libraries (a checkout under
# /root does not let it): else the forger is root, in its own host still.
if command -v setpriv >/dev/null &&
	setpriv --reuid=$U --regid=$U --clear-groups sh -c \
		'test -x "$1" && test -r "$2" && test -r "$3/libnccl.so.2"' sh \
		"$EXAMPLE" "$NG_PRELOAD" "$NG_SIM" 2>/dev/null; then
	chmod 0711 "$NG_TMP"
	mkdir -p "$NG_TMP/u$U"
	chown "$U:$U" "$NG_TMP/u$U"
	AS="setpriv --reuid=$U --regid=$U --clear-groups env HOME=$NG_TMP/u$U LTTNG_HOME=$NG_TMP/u$U"
	note "the forger is uid $U"
else
	note "setpriv missing, or uid $U cannot reach the build: the forger is root"
fi
unshare -u -m sh -c 'mount -t tmpfs -o mode=0755 ng-host /var/run/lttng &&
	hostname hosta && echo ready && exec sleep 100000' \
	>"$NG_TMP/host.forger.ready" 2>&1 &
echo $! >"$NG_TMP/host.forger.keeper"
NG_HOSTS="$NG_HOSTS forger"
i=0
until grep -q ready "$NG_TMP/host.forger.ready"; do
	[ $i -lt 50 ] || { cat "$NG_TMP/host.forger.ready"; fail "forger not up"; }
	sleep 0.1; i=$((i + 1))
done
# shellcheck disable=SC2086
ng_on forger $AS lttng-sessiond --daemonize --no-kernel >"$NG_TMP/forger.sessiond" 2>&1 ||
	{ cat "$NG_TMP/forger.sessiond"; fail "no session daemon for the forger"; }
if [ -n "$AS" ]; then
	cat "$NG_TMP/u$U/.lttng/lttng-sessiond.pid" >"$NG_TMP/host.forger.sessiond.pid"
else
	ng_on forger cat /var/run/lttng/lttng-sessiond.pid >"$NG_TMP/host.forger.sessiond.pid"
fi

ID=0
# ranks HOST TAG JOB [WRAP...]: ranks 0-1 of the example on HOST, each
# under WRAP (`ncclguard run ...`) or the shim alone; waits for both.
ranks() {
	_h=$1 _tag=$2 _job=$3; shift 3
	ID=$((ID + 1))
	for r in 0 1; do
		ng_rank "$_h" "$_tag" $r 2 LD_LIBRARY_PATH="$NG_SIM" NCCLGUARD_JOB="$_job" \
			-- "$@" "$EXAMPLE" --id-file "$IDDIR/id.$ID" --min-bytes 8 --max-bytes 64 \
			--warmup 1 --iters 5
	done
	for r in 0 1; do
		i=0
		until [ -f "$NG_TMP/$_tag.$r.rc" ]; do
			[ $i -lt 1200 ] || fail "rank $r of $_tag still running after 120 s"
			sleep 0.1; i=$((i + 1))
		done
		[ "$(cat "$NG_TMP/$_tag.$r.rc")" = 0 ] ||
			{ cat "$NG_TMP/$_tag.$r.err"; fail "rank $r of $_tag: exit $(cat "$NG_TMP/$_tag.$r.rc")"; }
	done
}

# forge SESSION: the forger's live session SESSION at the relay, with
# ranks 0-1 of job J in it.
# shellcheck disable=SC2086
forge() {
	ng_on forger $AS lttng create "$1" --live=1000000 --set-url="$RELAY" >/dev/null &&
	ng_on forger $AS lttng enable-channel -u ncclguard --buffers-uid >/dev/null &&
	ng_on forger $AS lttng enable-event -u -c ncclguard 'ncclguard:*' >/dev/null &&
	ng_on forger $AS lttng add-context -u -c ncclguard -t vpid -t vtid -t procname >/dev/null &&
	ng_on forger $AS lttng start >/dev/null || fail "no forged session"
	[ -z "$AS" ] || IDDIR=$NG_TMP/u$U
	ranks forger "f$ID" "$J" $AS env LD_PRELOAD="$NG_PRELOAD"
	IDDIR=$NG_TMP
	ng_on forger $AS lttng destroy "$1" >/dev/null || fail "forged session not destroyed"
}

# report DIR...: analyze --json into $NG_TMP/rep.json; sets rc.
report() {
	rc=0
	rm -f "$NG_TMP/rep.json"
	"$NG_BIN" analyze "$@" --json "$NG_TMP/rep.json" >"$NG_TMP/an.out" 2>"$NG_TMP/an.err" || rc=$?
}

note "a forged session named otherwise, with the job's id: left out, said"
J="job-$$"
ranks hosta real "$J" "$NG_BIN" run --relay "$RELAY" -o "$NG_TMP/runs"
SESSION=$(sed -n 's/^  "session": "\(.*\)",$/\1/p' "$NG_TMP/runs/hosta/run.json")
case "$SESSION" in ncclguard-*-"$J") ;; *) fail "run.json session: '$SESSION'" ;; esac
assert_eq "$(sed -n 's/^  "session_host": "\(.*\)",$/\1/p' "$NG_TMP/runs/hosta/run.json")" hosta \
	"run.json session_host"
assert_eq "$(stat -c %a "$NG_TMP/runs/hosta/run.json")" 600 "run.json mode"
forge "ncclguard-999-1-$J"
assert_eq "$(ls "$NG_TMP/relay/hosta" | wc -l)" 2 "sessions of hosta at the relay"
# The forgery is real: read alone, it holds ranks 0-1 of the job.
report "$NG_TMP/relay/hosta/ncclguard-999-1-$J"-*
python3 - "$NG_TMP/rep.json" "$J" <<'EOF' || fail "the forged session alone"
import json, sys
r = json.load(open(sys.argv[1]))
ranks = sorted(x["rank"] for x in r["ranks"])
if ranks != [0, 1] or r["job"] != sys.argv[2]:
    print("ranks %s job %s" % (ranks, r["job"]))
    sys.exit(1)
EOF
report "$NG_TMP/relay" "$NG_TMP/runs"
cat "$NG_TMP/an.err"
python3 - "$NG_TMP/rep.json" "$J" <<'EOF' || fail "report with a forged session"
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
ranks = sorted((x["rank"], x["host"]) for x in r["ranks"])
if ranks != [(0, "hosta"), (1, "hosta")]:
    bad.append("ranks %s, expected 0 and 1 once each" % ranks)
if len({x["pid"] for x in r["ranks"]}) != 2:
    bad.append("pids %s" % [x["pid"] for x in r["ranks"]])
unv = [i for i in r["incomplete"] if i["what"] == "session_unverified"]
if len(unv) != 1 or "ncclguard-999-1-" + sys.argv[2] not in unv[0]["detail"]:
    bad.append("incomplete %s" % r["incomplete"])
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
# The relay's folder alone names no session: read, but said unchecked.
report "$NG_TMP/relay"
assert_grep '"session_unverified"' "$NG_TMP/rep.json"
assert_grep "no run record names a session of the relay" "$NG_TMP/rep.json"

note "a forged session with the job's own name: both left out"
rm -rf "$NG_TMP/relay/hosta/ncclguard-999-1-$J"-*
forge "$SESSION"
assert_eq "$(ls "$NG_TMP/relay/hosta" | grep -c "^$SESSION-")" 2 "sessions named $SESSION"
report "$NG_TMP/relay" "$NG_TMP/runs"
assert_eq "$rc" 1 "analyze with only a doubled session"
assert_grep "no trace left to read" "$NG_TMP/an.err"
assert_grep "host hosta has 2 sessions named $SESSION at the relay, and the run record names one: none is read" "$NG_TMP/an.err"
echo ok
