#!/bin/sh
# Runs every unit test binary (build/tests/test_*) and every test script
# (tests/*/test_*.sh), each under a time limit, and prints one summary line.
# NCCLGUARD_TESTS=pattern runs only the tests whose name contains it.
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NG_ROOT="$ROOT" NG_BUILD="$ROOT/$BUILD"
LIMIT=${NCCLGUARD_TEST_TIMEOUT:-300}
LOGDIR="$NG_BUILD/test-logs"
mkdir -p "$LOGDIR"
pass=0; fail=0; failed=""; nskip=0; skipped=""

run_one() {
	name=$1; shift
	case "$name" in *"${NCCLGUARD_TESTS:-}"*) ;; *) return ;; esac
	start=$(date +%s)
	if timeout -k 10 "$LIMIT" "$@" >"$LOGDIR/$name.log" 2>&1; then
		# A test that could not run here says "SKIP: why": shown, never
		# passed off as having run.
		why=$(sed -n 's/^SKIP: //p' "$LOGDIR/$name.log" | head -n 1)
		if [ -n "$why" ]; then
			nskip=$((nskip + 1)); skipped="$skipped $name"; echo "SKIP $name: $why"
		else
			pass=$((pass + 1)); echo "PASS $name ($(( $(date +%s) - start )) s)"
		fi
	else
		rc=$?
		fail=$((fail + 1)); failed="$failed $name"
		echo "FAIL $name (exit $rc, $(( $(date +%s) - start )) s); last lines of $LOGDIR/$name.log:"
		tail -n 25 "$LOGDIR/$name.log" | sed 's/^/    /'
	fi
}

# NG_UNIT_TESTS (make check sets it): the unit tests to run, by name; else
# every build/tests/test_*.
for t in ${NG_UNIT_TESTS:-$(cd "$NG_BUILD/tests" && ls -d test_* 2>/dev/null)}; do
	[ -x "$NG_BUILD/tests/$t" ] || { [ -n "${NG_UNIT_TESTS:-}" ] && run_one "$t" false; continue; }
	run_one "$t" "$NG_BUILD/tests/$t"
done
for t in "$ROOT"/tests/*/test_*.sh; do
	[ -f "$t" ] || continue
	run_one "$(basename "$(dirname "$t")")_$(basename "$t" .sh)" sh "$t"
done
echo "$pass passed, $fail failed${skipped:+, $nskip skipped:$skipped}"
[ "$fail" = 0 ] || { echo "failed:$failed"; exit 1; }
