#!/bin/sh
# Where no session daemon runs: `ncclguard run` starts one and records;
# where none can be started (lttng-sessiond not in PATH), it warns and
# still runs the job, preloaded but untraced, with the job's exit status.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
ng_need_no_sessiond "needs a host without a reachable session daemon"
[ -z "$(ng_sessiond_pid || true)" ] || fail "a session daemon runs in the isolated test"

note "LTTng broken (no lttng-sessiond in PATH): warn, run untraced"
mkdir "$NG_TMP/nobin"
rc=0
PATH="$NG_TMP/nobin" "$NG_BIN" run -o "$NG_TMP/broken" -- "$NG_TP_EMIT" -n 3 -x 3 \
	>"$NG_TMP/broken.out" 2>"$NG_TMP/broken.err" || rc=$?
cat "$NG_TMP/broken.err"
assert_eq "$rc" 3 "exit status of the untraced job"
assert_grep "lttng-sessiond not found" "$NG_TMP/broken.err"
assert_grep "running .*untraced" "$NG_TMP/broken.err"
assert_grep "enabled=0" "$NG_TMP/broken.out"
rc=0
PATH="$NG_TMP/nobin" "$NG_BIN" run -o "$NG_TMP/broken2" -- /bin/sh -c \
	'echo "trace=$NCCLGUARD_TRACE preload=$LD_PRELOAD"' >"$NG_TMP/broken2.out" 2>&1 || rc=$?
assert_eq "$rc" 0 "exit status of the untraced shell"
assert_grep "trace=0 preload=.*libncclguard.so" "$NG_TMP/broken2.out"

note "no daemon running: ncclguard run starts one and records"
rc=0
"$NG_BIN" run -o "$NG_TMP/trace" -- "$NG_TP_EMIT" -n 4 >"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
cat "$NG_TMP/err"
assert_eq "$rc" 0 "exit status"
assert_grep "started .*lttng-sessiond" "$NG_TMP/err"
[ -n "$(ng_sessiond_pid || true)" ] || fail "no session daemon after ncclguard run"
pid=$(ng_emit_pid "$NG_TMP/out")
ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"
ng_assert_all "$NG_TMP/text" "$pid" 4

note "the daemon it started serves the next run"
rc=0
"$NG_BIN" run -o "$NG_TMP/trace2" -- "$NG_TP_EMIT" -n 2 >"$NG_TMP/out2" 2>"$NG_TMP/err2" || rc=$?
assert_eq "$rc" 0 "exit status"
assert_no_grep "started .*lttng-sessiond" "$NG_TMP/err2"
ng_trace_text "$NG_TMP/trace2" "$NG_TMP/text2"
ng_assert_all "$NG_TMP/text2" "$(ng_emit_pid "$NG_TMP/out2")" 2
echo "ok"
