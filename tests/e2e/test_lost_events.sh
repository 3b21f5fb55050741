#!/bin/sh
# Events LTTng drops are counted and said, exactly: a job whose events
# outrun the consumer daemon (here stopped, as a loaded machine may hold
# it back) leaves a trace in which recorded + lost == emitted, and `run`
# and `analyze` both give that count.  tp_emit loads the provider (and
# registers) while the consumer runs, then waits; the consumer daemon of
# our session daemon is stopped, tp_emit emits N events of each of its
# kinds, far more than the buffers hold; the consumer goes on and writes
# the buffers out, tp_emit exits, and `run` ends the recording.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
ng_need_no_sessiond "stopping the host's consumer daemon would stop others' tracing"

N=20000
KINDS=$(echo $NG_EVENTS | wc -w)

# consumers: the consumer daemons our session daemon started.
consumers() {
	sd=$(ng_sessiond_pid) || return 0
	for s in /proc/[0-9]*/stat; do
		# comm in parentheses, then state, then the parent's pid
		sed -n "s/^\([0-9]*\) (lttng-consumerd) . $sd .*/\1/p" "$s" 2>/dev/null
	done
}
# alive PID: running, or stopped; not a zombie, not gone.
alive() {
	[ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null
}
# until_true SECONDS CMD...: polls CMD every 0.1 s until it succeeds.
until_true() {
	_s=$1; shift
	_i=0
	until "$@"; do
		[ $_i -lt $((_s * 10)) ] || return 1
		sleep 0.1; _i=$((_i + 1))
	done
}
# drained: the trace's stream files have stopped growing for a second.
drained() {
	_sz=$(cat "$NG_TMP"/trace/*/ust/uid/*/64-bit/ncclguard_* 2>/dev/null | wc -c)
	[ "$_sz" -gt 0 ] && [ "$_sz" = "${_last_sz:-}" ] && [ "$((_same += 1))" -ge 10 ] && return 0
	[ "$_sz" = "${_last_sz:-}" ] || _same=0
	_last_sz=$_sz
	return 1
}
STOPPED=""
NG_AT_EXIT='[ -z "$STOPPED" ] || kill -CONT $STOPPED 2>/dev/null; '"$NG_AT_EXIT"

"$NG_BIN" run -o "$NG_TMP/trace" -- "$NG_TP_EMIT" -n $N -w "$NG_TMP/go" -W "$NG_TMP/done" \
	>"$NG_TMP/out" 2>"$NG_TMP/err" &
ng=$!
until_true 120 grep -q "^tp_emit pid=" "$NG_TMP/out" ||
	{ cat "$NG_TMP/out" "$NG_TMP/err"; fail "tp_emit did not load the provider"; }
pid=$(ng_emit_pid "$NG_TMP/out")
STOPPED=$(consumers)
[ -n "$STOPPED" ] || fail "no consumer daemon of our session daemon"
note "consumer daemons $STOPPED stopped; tp_emit (pid $pid) emits $N x $KINDS events"
kill -STOP $STOPPED
touch "$NG_TMP/go"
until_true 120 grep -q "^tp_emit emitted" "$NG_TMP/out" || fail "tp_emit did not emit"
# The consumer drains the full buffers before the session stops: LTTng
# counts the events it discarded in the packets it writes, and a stop
# whose flush finds every sub-buffer still full writes no last packet,
# so the count of the discards after the last one would go unsaid.
kill -CONT $STOPPED
STOPPED=""
until_true 60 drained || fail "the consumer did not write the buffers out"
touch "$NG_TMP/done"
until_true 120 eval '! alive "$pid"' || fail "tp_emit did not end"
rc=0
wait $ng || rc=$?
cat "$NG_TMP/err"
assert_eq "$rc" 0 "run's exit status"

lost=$(sed -n 's/^ncclguard: warning: \([0-9]*\) events lost (buffers full), 0 packets lost; .*/\1/p' \
	"$NG_TMP/err")
[ -n "$lost" ] && [ "$lost" -gt 0 ] || fail "run did not say that events were lost"
ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"
recorded=$(grep -c "^\[.*ncclguard:[a-z_]*: .*vpid = $pid," "$NG_TMP/text" || true)
note "$recorded recorded + $lost lost, of $((N * KINDS)) emitted"
assert_eq "$((recorded + lost))" "$((N * KINDS))" "recorded + lost"

"$NG_BIN" analyze "$NG_TMP/trace" --json "$NG_TMP/report.json" >"$NG_TMP/an" 2>&1 ||
	{ cat "$NG_TMP/an"; fail "analyze failed"; }
python3 - "$NG_TMP/report.json" "$lost" <<'EOF' || fail "report.json"
import json, sys
r, lost = json.load(open(sys.argv[1])), int(sys.argv[2])
assert r["lost_events"] == lost, (r["lost_events"], lost)
said = [i for i in r["incomplete"] if i["what"] == "events_lost"]
assert said and str(lost) in said[0]["detail"], r["incomplete"]
EOF
echo PASS
