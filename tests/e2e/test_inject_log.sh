#!/bin/sh
# Fault injection tells without flooding: each rule's first 3 firings in a
# process are logged, then one line says the rest are counted, not logged,
# and the count comes at exit; a rule that fires fewer times logs each
# firing and nothing more.  The trace keeps an inject event for every
# firing.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EX="$NG_BUILD/bin/allreduce_example"
[ -x "$EX" ] && [ -f "$NG_SIM/libnccl.so.2" ] || fail "CPU backend or examples not built"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0

note "rule 1 on every all-reduce of rank 1 (10), rule 2 twice on rank 0"
rc=0
"$NG_BIN" run -o "$NG_TMP/t" --inject "delay:ms=1,rank=1,op=allreduce;delay:ms=2,rank=0,op=allreduce,count=2" \
	-- "$EX" --launch 2 --min-bytes 8 --max-bytes 8 --iters 10 --warmup 0 \
	>"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
assert_eq "$rc" 0 "exit status"
E="$NG_TMP/err"
grep 'ncclguard\[rank 1 ' "$E" | grep -e inject >"$NG_TMP/r1"
grep 'ncclguard\[rank 0 ' "$E" | grep -e inject >"$NG_TMP/r0"

assert_eq "$(grep -c 'injecting delay ms=1 into allreduce' "$NG_TMP/r1")" 3 "rank 1: firings logged"
for seq in 1 2 3; do
	assert_grep "injecting delay ms=1 into allreduce seq $seq on comm" "$NG_TMP/r1"
done
assert_eq "$(grep -c 'injection rule 1 (delay ms=1): further firings are counted, not logged; the total comes at exit$' "$NG_TMP/r1")" \
	1 "rank 1: the line that says the rest are counted"
assert_eq "$(grep -c 'injection rule 1 (delay ms=1) fired 10 times in all$' "$NG_TMP/r1")" 1 \
	"rank 1: the count at exit"
# In that order: the firings, the note, the count.
assert_eq "$(sed -e 's/.*injecting.*/F/' -e 's/.*further firings.*/N/' -e 's/.*in all$/T/' \
	-e 's/.*armed.*/A/' "$NG_TMP/r1" | tr -d '\n')" AFFFNT "rank 1: the order of its lines"

assert_eq "$(grep -c 'injecting delay ms=2 into allreduce' "$NG_TMP/r0")" 2 "rank 0: firings logged"
assert_no_grep "further firings\|in all" "$NG_TMP/r0"
assert_no_grep "rule 2" "$NG_TMP/r1"

note "every firing is in the trace"
ng_trace_text "$NG_TMP/t" "$NG_TMP/text"
assert_eq "$(grep -c 'ncclguard:inject: .*kind = "delay".*detail = "ms=1"' "$NG_TMP/text")" 10 \
	"inject events of rule 1"
assert_eq "$(grep -c 'ncclguard:inject: .*kind = "delay".*detail = "ms=2"' "$NG_TMP/text")" 2 \
	"inject events of rule 2"
echo ok
