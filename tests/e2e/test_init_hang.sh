#!/bin/sh
# A job hung in init, recorded: ranks 0 and 1 of 3 start, rank 2 never
# does.  Both time out in init and exit 4, and the analyzer names rank 2
# as the one that never entered it (a job stuck in init_process_group
# with no clue which rank is missing is what this answers).  The same
# with nonblocking comms: the init call returns ncclInProgress at once
# and the program polls ncclCommGetAsyncError, so no host call hangs; the
# comm itself is timed.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/preload/job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
export LD_LIBRARY_PATH="$NG_SIM" NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=exit \
	NCCLGUARD_DUMP_DIR="$NG_TMP" WORLD_SIZE=3
hung_init() {	# $1: a name, then the job's options
	name=$1; shift
	rc=0
	timeout -k 5 60 "$NG_BIN" run -o "$NG_TMP/$name" -- sh -c '
		j=$1 id=$2; shift 2
		RANK=0 "$j" "$id" 1 "$@" & a=$!
		RANK=1 "$j" "$id" 1 "$@" & b=$!
		wait $a; ra=$?; wait $b; rb=$?
		echo "exit $ra $rb"' sh "$JOB" "$NG_TMP/$name.id" "$@" \
		>"$NG_TMP/$name.out" 2>"$NG_TMP/$name.err" || rc=$?
	assert_grep "exit 4 4" "$NG_TMP/$name.out"
	"$NG_BIN" analyze "$NG_TMP/$name" --json "$NG_TMP/$name.json" >"$NG_TMP/$name.summary" 2>&1 ||
		{ cat "$NG_TMP/$name.summary"; fail "$name: analyze exited $?"; }
	assert_grep "hang: init of comm [0-9a-f]* never finished: ranks 0,1 waiting, rank 2 never entered it (1 not in the trace)" \
		"$NG_TMP/$name.summary"
	python3 - "$NG_TMP/$name.json" <<'PY' || fail "$name: report.json: the init hang"
import json, sys
h = json.load(open(sys.argv[1]))["hangs"]
assert len(h) == 1 and h[0]["op"] == "init", h
assert h[0]["waiting_ranks"] == [0, 1] and h[0]["missing_ranks"] == [2], h
assert h[0]["missing_comm_ranks"] == [2], h
PY
	echo "$name: rank 2 named"
}

hung_init blocking
assert_grep "host call ncclCommInitRankConfig (comm [0-9a-f]*) has not returned after 1\.[0-9] s" \
	"$NG_TMP/blocking.err"
hung_init nonblocking --nonblocking
assert_grep "comm [0-9a-f]* (nonblocking initconfig) still initializing after 1\.[0-9] s" \
	"$NG_TMP/nonblocking.err"
grep -q "has not returned" "$NG_TMP/nonblocking.err" && fail "nonblocking: a host call reported"
[ "$(grep -c 'still initializing' "$NG_TMP/nonblocking.err")" = 2 ] ||
	fail "nonblocking: want one report from each of ranks 0 and 1"
