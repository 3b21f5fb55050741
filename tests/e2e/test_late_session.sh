#!/bin/sh
# A session started while the job runs (lttng create/enable/start by hand,
# not `ncclguard run`): calls read the provider's tracepoint states, which
# the session daemon sets in the running process, so recording begins with
# the calls right after `lttng start` and then every call is recorded, up to
# the last.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/preload/job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
command -v lttng >/dev/null && command -v lttng-sessiond >/dev/null ||
	{ echo "SKIP: lttng or lttng-sessiond not installed"; exit 0; }
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0

ng_sessiond_pid >/dev/null || lttng-sessiond --daemonize --no-kernel ||
	fail "cannot start lttng-sessiond"
N=400
S=ng-late-$$
# A failed step leaves neither the job nor the session behind.
job=
trap '[ -z "$job" ] || kill $job 2>/dev/null; lttng destroy "$S" >/dev/null 2>&1; ng_lttng_cleanup
	[ -n "${NG_KEEP:-}" ] && echo "kept $NG_TMP" || rm -rf "$NG_TMP"' EXIT
note "a job of $N all-reduces 10 ms apart; a session started once it is at 20"
env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_TRACE=1 \
	"$JOB" "$NG_TMP/id" $N --pace 10 >"$NG_TMP/out" 2>"$NG_TMP/err" &
job=$!
pid=$job
i=0
until grep -q '^iter 20 ok' "$NG_TMP/out" || [ $i -ge 300 ]; do sleep 0.05; i=$((i + 1)); done
grep -q '^iter 20 ok' "$NG_TMP/out" || { cat "$NG_TMP/out" "$NG_TMP/err"; fail "the job did not get going"; }
lttng create "$S" --output="$NG_TMP/trace" >"$NG_TMP/lttng" 2>&1 &&
	lttng enable-event -u -s "$S" 'ncclguard:*' >>"$NG_TMP/lttng" 2>&1 &&
	lttng add-context -u -s "$S" -t vpid >>"$NG_TMP/lttng" 2>&1 &&
	lttng start "$S" >>"$NG_TMP/lttng" 2>&1 || { cat "$NG_TMP/lttng"; fail "lttng session setup"; }
started=$(sed -n 's/^iter \([0-9]*\) ok/\1/p' "$NG_TMP/out" | tail -n 1)
rc=0
wait $job || rc=$?
job=
[ $rc = 0 ] || { cat "$NG_TMP/out" "$NG_TMP/err"; fail "job exit $rc"; }
lttng stop "$S" >>"$NG_TMP/lttng" 2>&1 && lttng destroy "$S" >>"$NG_TMP/lttng" 2>&1 ||
	{ cat "$NG_TMP/lttng"; fail "lttng stop/destroy"; }
assert_eq "$(grep -c ' ok$' "$NG_TMP/out")" $N "iterations ok"

ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"
grep "ncclguard:coll_enqueue: .*vpid = $pid[^0-9]" "$NG_TMP/text" |
	sed 's/.* seq = \([0-9]*\),.*/\1/' >"$NG_TMP/seqs"
[ -s "$NG_TMP/seqs" ] || { head -n 5 "$NG_TMP/text"; fail "nothing recorded after lttng start"; }
first=$(head -n 1 "$NG_TMP/seqs")
note "recorded seq $first..$(tail -n 1 "$NG_TMP/seqs"); the job was at $started when the session started"
# The daemon updates the process within milliseconds: a few calls at most.
[ "$first" -gt 20 ] && [ "$first" -le $((started + 15)) ] ||
	fail "recording began at seq $first, the session at call $started"
seq "$first" $N >"$NG_TMP/want"
cmp -s "$NG_TMP/seqs" "$NG_TMP/want" || fail "calls $first..$N not all recorded, in order"
