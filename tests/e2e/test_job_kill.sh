#!/bin/sh
# A rank killed with SIGKILL keeps every event it emitted: on the CPU
# backend rank 1 stalls (injected) in its third all-reduce and is killed
# there; its first two calls, their completions and the injection are in
# the trace, and the other ranks' calls and timeouts on seq 3 too.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_DUMP_DIR="$NG_TMP"
timeout -k 5 60 "$NG_BIN" run -o "$NG_TMP/trace" --timeout 2 --on-timeout exit \
	--inject 'stall:rank=1,seq=3' -- "$EXAMPLE" --launch 4 --min-bytes 1K --max-bytes 1K \
	--iters 5 --warmup 0 >"$NG_TMP/out" 2>"$NG_TMP/err" &
ng=$!
i=0
while ! grep -q 'rank 1 pid [0-9]*\]: injecting stall' "$NG_TMP/err" && [ $i -lt 300 ]; do
	sleep 0.05; i=$((i + 1))
done
pid=$(sed -n 's/.*rank 1 pid \([0-9]*\)\]: injecting stall.*/\1/p' "$NG_TMP/err" | head -n 1)
[ -n "$pid" ] || { kill $ng; cat "$NG_TMP/err"; fail "rank 1 never stalled"; }
# The shim writes a call's events from its watchdog thread, within its
# poll period (<= 100 ms) of the call; what it has written must survive.
sleep 0.5
kill -9 "$pid"
rc=0; wait $ng || rc=$?
[ "$rc" != 0 ] || fail "the job succeeded with a rank killed"
assert_grep "(0 events lost)" "$NG_TMP/err"
ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"
T="$NG_TMP/text"

seqs() { grep "ncclguard:$1: .*vpid = $2," "$T" | sed -n 's/.* seq = \([0-9]*\),.*/\1/p' | tr '\n' ' '; }
note "the killed rank (pid $pid)"
assert_eq "$(ng_count "$T" process_info "$pid")" 1 "its process_info"
assert_eq "$(ng_count "$T" comm_init_end "$pid")" 1 "its comm_init_end"
assert_eq "$(seqs coll_enqueue "$pid")" "1 2 " "its enqueued seqs"
assert_eq "$(seqs coll_complete "$pid")" "1 2 " "its completed seqs"
grep "ncclguard:inject: .*vpid = $pid," "$T" | grep -q 'kind = "stall", .*seq = 3,' ||
	fail "its stall injection is not in the trace"
note "the other ranks"
# The ranks name their pids when they arm the injection (the launcher is rank ?).
others=$(sed -n 's/^ncclguard\[rank [0-9][0-9]* pid \([0-9]*\)\]: fault injection armed.*/\1/p' \
	"$NG_TMP/err" | grep -v "^$pid\$")
assert_eq "$(echo $others | wc -w)" 3 "other ranks"
for p in $others; do
	# The CPU backend, like a GPU, queues all five; the third never ends.
	assert_eq "$(seqs coll_enqueue "$p")" "1 2 3 4 5 " "enqueued seqs of pid $p"
	assert_eq "$(seqs coll_complete "$p")" "1 2 " "completed seqs of pid $p"
	grep "ncclguard:timeout: .*vpid = $p," "$T" | grep -q 'seq = 3, op = "allreduce"' ||
		fail "no timeout on seq 3 from pid $p"
done
echo "ok"
