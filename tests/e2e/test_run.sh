#!/bin/sh
# `ncclguard run`: exit status passed through (code, signal, exec failure),
# options become the shim's variables with the library first in
# LD_PRELOAD, a job id and a private flight folder are exported, the run
# record says how the run ended, and a job killed with SIGKILL keeps every
# event it emitted.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"

# run NAME ARGS...: ncclguard run -o $NG_TMP/NAME ARGS; sets rc.
run() {
	name=$1; shift
	rc=0
	"$NG_BIN" run -o "$NG_TMP/$name" "$@" >"$NG_TMP/$name.out" 2>"$NG_TMP/$name.err" || rc=$?
}

note "exit status of the command"
run st7 -- "$NG_TP_EMIT" -n 1 -x 7
assert_eq "$rc" 7 "exit status"
assert_grep "(0 events lost)" "$NG_TMP/st7.err"
note "the run record"
assert_eq "$(ng_run_field "$NG_TMP/st7" schema)" '"ncclguard-run/1"' "run.json schema"
assert_eq "$(ng_run_field "$NG_TMP/st7" status)" '"finished"' "run.json status"
assert_eq "$(ng_run_field "$NG_TMP/st7" exit_status)" 7 "run.json exit_status"
assert_eq "$(ng_run_field "$NG_TMP/st7" disk_full)" false "run.json disk_full"
# Private: it names the session `analyze` trusts at a relay.
assert_eq "$(stat -c %a "$NG_TMP"/st7/*/run.json)" 600 "run.json mode"
assert_grep '^  "session": "ncclguard-[0-9]*-[0-9]*-[A-Za-z0-9._-]*",$' "$NG_TMP"/st7/*/run.json
assert_eq "$(ng_run_field "$NG_TMP/st7" session_host)" "\"$(hostname)\"" "run.json session_host"
assert_eq "$(find "$NG_TMP/st7" -name '.*')" "" "hidden files left in the trace folder"
run st0 -- true
assert_eq "$rc" 0 "exit status of true"
run sig -- sh -c 'kill -USR1 $$'
assert_eq "$rc" 138 "exit status of a job killed by SIGUSR1"
run nocmd -- "$NG_TMP/no-such-command"
assert_eq "$rc" 127 "exit status of a missing command"
assert_grep "no-such-command" "$NG_TMP/nocmd.err"
run usage --on-timeout sometimes -- true
assert_eq "$rc" 2 "exit status of a bad option"
rc=0; "$NG_BIN" run --help >"$NG_TMP/help" 2>&1 || rc=$?
assert_eq "$rc" 0 "run --help"
for w in -o --policy --timeout --on-timeout --inject --stacks SIGINT SIGTERM LD_PRELOAD lost; do
	assert_grep "$w" "$NG_TMP/help"
done

note "a job killed with SIGKILL keeps every event it emitted"
run kill -- "$NG_TP_EMIT" -n 40 -k
assert_eq "$rc" 137 "exit status of a SIGKILLed job"
pid=$(ng_emit_pid "$NG_TMP/kill.out")
[ -n "$pid" ] || fail "no pid from tp_emit"
ng_trace_text "$NG_TMP/kill" "$NG_TMP/kill.text"
ng_assert_all "$NG_TMP/kill.text" "$pid" 40

note "options become the shim's environment; the library comes first in LD_PRELOAD"
: >"$NG_TMP/empty.conf"
cd "$NG_TMP"
# (An instrumented CLI itself needs the ASan runtime first.)
pre=/lib/x86_64-linux-gnu/libm.so.6
case "${NCCLGUARD_TEST_SANITIZE:-}" in *address*) pre="$(gcc -print-file-name=libasan.so) $pre" ;; esac
LD_PRELOAD=$pre run env --policy empty.conf --timeout 5 --on-timeout exit \
	--inject 'delay:ms=1,op=allreduce' --stacks -- sh -c 'env | grep -e ^NCCLGUARD -e ^LD_PRELOAD -e ^LTTNG_UST'
cd - >/dev/null
assert_eq "$rc" 0 "env job"
E="$NG_TMP/env.out"
assert_grep "^NCCLGUARD_POLICY=$NG_TMP/empty.conf\$" "$E"
assert_grep '^NCCLGUARD_TIMEOUT=5$' "$E"
assert_grep '^NCCLGUARD_ON_TIMEOUT=exit$' "$E"
assert_grep '^NCCLGUARD_INJECT=delay:ms=1,op=allreduce$' "$E"
assert_grep '^NCCLGUARD_STACKS=1$' "$E"
assert_grep '^NCCLGUARD_TRACE=1$' "$E"
assert_grep '^LTTNG_UST_REGISTER_TIMEOUT=' "$E"
job=$(sed -n 's/^NCCLGUARD_JOB=//p' "$E")
assert_eq "\"$job\"" "$(ng_run_field "$NG_TMP/env" job)" "NCCLGUARD_JOB made for the job"
flight=$(sed -n 's/^NCCLGUARD_FLIGHT_DIR=//p' "$E")
case "$flight" in "$(ng_rundir)"/*) ;; *) fail "NCCLGUARD_FLIGHT_DIR '$flight'" ;; esac
[ ! -e "$flight" ] || fail "flight folder $flight left behind"
lib=$(cd "$NG_BUILD/lib" && pwd -P)/libncclguard.so
# Sanitizer builds put their runtime ahead of the shim.
sed -n 's/^LD_PRELOAD=//p' "$E" | tr ' :' '\n\n' | grep -v libasan >"$NG_TMP/preload"
assert_eq "$(head -n 1 "$NG_TMP/preload")" "$lib" "first of LD_PRELOAD"
assert_grep "libm.so.6" "$NG_TMP/preload"

echo "ok"
