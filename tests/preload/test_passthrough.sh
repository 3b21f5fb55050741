# The shim forwards every call unchanged (issue 2): the same results with
# and without it for every collective, grouped calls and split comms; the
# program's exit status passes through; NCCLGUARD_DISABLE=1 is a pure
# pass-through; a process without NCCL gets an error code and one warning,
# never a crash.
. "$NG_ROOT/tests/lib.sh"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
EX="$NG_BUILD/bin/allreduce_example"

# The checked results, minus timing columns: identical with and without.
results() { grep -E "check|^rank" "$1" | sed 's/ *[0-9.]* *[0-9.]* *[0-9.]* *\(ok\|-\)$//' | sort; }
for mode in "--mixed" "--mixed --group" "--split --mixed"; do
	# shellcheck disable=SC2086
	"$EX" --launch 4 --check $mode --max-bytes 16K --step-factor 16 --iters 2 --warmup 1 \
		>"$NG_TMP/plain.out" 2>&1 || fail "without the shim ($mode): $(tail -3 "$NG_TMP/plain.out")"
	# shellcheck disable=SC2086
	LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=debug "$EX" --launch 4 --check $mode --max-bytes 16K \
		--step-factor 16 --iters 2 --warmup 1 >"$NG_TMP/shim.out" 2>"$NG_TMP/shim.err" ||
		fail "with the shim ($mode): $(tail -3 "$NG_TMP/shim.err")"
	assert_eq "$(grep -c 'check OK' "$NG_TMP/shim.out")" 4 "ranks checked OK with the shim ($mode)"
	assert_eq "$(results "$NG_TMP/shim.out")" "$(results "$NG_TMP/plain.out")" "results ($mode)"
	assert_grep "comm [0-9a-f]*: rank 3 of 4" "$NG_TMP/shim.err"
done
assert_grep "(split)" "$NG_TMP/shim.err"

note "errno after a call is NCCL's, whatever the shim did (first call, timing, recording)"
JOB="$NG_BUILD/tests/preload/job"
errnos() { _t=$1; shift; launch "$_t" 2 "$@" -- "$JOB" "$NG_TMP/$_t.id" 40 --errno
	wait_ranks "$_t" 2 60
	for r in 0 1; do assert_eq "$(cat "$NG_TMP/$_t.$r.rc")" 0 "$_t rank $r" >&2; done
	grep -h errno "$NG_TMP/$_t.0.out" "$NG_TMP/$_t.1.out" | tr ' ' _; }
# shellcheck disable=SC2046
set -- $(errnos e_plain)
want="$*"
[ "$#" = 80 ] || fail "errno lines without the shim: $want"
# shellcheck disable=SC2046
set -- $(errnos e_shim LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_SAMPLE=3 NCCLGUARD_STACKS=1)
assert_eq "$*" "$want" "errno after each call, shim sampling 1 in 3, call sites (which set EAGAIN)"
# shellcheck disable=SC2046
set -- $(errnos e_rec LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_SAMPLE=1 NCCLGUARD_INJECT=delay:ms=1,op=allreduce)
assert_eq "$*" "$want" "errno after each call, every call timed, an injected delay"

note "the watchdog thread is named, so that top and perf tell it apart"
launch wd 1 LD_PRELOAD="$NG_PRELOAD" -- "$JOB" "$NG_TMP/wd.id" 1 --sleep 3
i=0; names=""
while [ $i -lt 40 ] && ! echo "$names" | grep -q ncclguard-wd; do
	sleep 0.1; i=$((i + 1))
	pid=$(pgrep -f "$NG_TMP/wd.id" | head -n 1)
	[ -n "$pid" ] && names=$(cat /proc/"$pid"/task/*/comm 2>/dev/null)
done
echo "$names" | grep -qx ncclguard-wd || fail "no thread named ncclguard-wd in the job: $names"
wait_ranks wd 1 20
assert_eq "$(cat "$NG_TMP/wd.0.rc")" 0 "idle job"

note "exit status passes through"
LD_PRELOAD="$NG_PRELOAD" "$EX" --launch 2 --max-bytes 1K --iters 1 --warmup 0 --exit-code 7 >/dev/null 2>&1
assert_eq "$?" 7 "exit status under the shim"

note "NCCLGUARD_DISABLE=1: nothing of the shim runs"
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_DISABLE=1 NCCLGUARD_LOG=debug "$EX" --launch 2 --check --max-bytes 1K \
	--iters 1 --warmup 0 >"$NG_TMP/dis.out" 2>"$NG_TMP/dis.err" || fail "disabled run failed"
assert_eq "$(grep -c 'check OK' "$NG_TMP/dis.out")" 2 "ranks checked OK, disabled"
# Only the line that says so: no tracer, no watchdog, no policy.
assert_eq "$(grep -c 'ncclguard\[' "$NG_TMP/dis.err")" "$(grep -c 'NCCLGUARD_DISABLE=1: pass-through' "$NG_TMP/dis.err")" \
	"shim messages while disabled"

note "no NCCL in the process: an error code and one warning"
cat >"$NG_TMP/nonccl.py" <<'PY'
import ctypes
lib = ctypes.CDLL(None)
v = ctypes.c_int(0)
print("rc", lib.ncclGetVersion(ctypes.byref(v)), lib.ncclGetVersion(ctypes.byref(v)))
PY
env -u LD_LIBRARY_PATH LD_PRELOAD="$NG_PRELOAD" python3 "$NG_TMP/nonccl.py" >"$NG_TMP/nonccl.out" 2>"$NG_TMP/nonccl.err" ||
	fail "the process crashed: $(cat "$NG_TMP/nonccl.err")"
assert_grep "rc 2 2" "$NG_TMP/nonccl.out"
assert_eq "$(grep -c 'missing from the loaded library' "$NG_TMP/nonccl.err")" 1 "one warning"
