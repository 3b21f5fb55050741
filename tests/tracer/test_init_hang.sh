#!/bin/sh
# A job hung in init, recorded: ranks 0 and 1 of 3 start, rank 2 never
# does.  Both time out in init and exit 4, and the analyzer names rank 2
# as the one that never entered it (a job stuck in init_process_group
# with no clue which rank is missing is what this answers).
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/tracer/common.sh"
JOB="$NG_BUILD/tests/shim/job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
export LD_LIBRARY_PATH="$NG_SIM" NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=exit \
	NCCLGUARD_DUMP_DIR="$NG_TMP" WORLD_SIZE=3
rc=0
timeout -k 5 60 "$NG_BIN" run -o "$NG_TMP/trace" -- sh -c '
	RANK=0 "$1" "$2" 1 & a=$!
	RANK=1 "$1" "$2" 1 & b=$!
	wait $a; ra=$?; wait $b; rb=$?
	echo "exit $ra $rb"' sh "$JOB" "$NG_TMP/init.id" >"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
assert_grep "exit 4 4" "$NG_TMP/out"
"$NG_BIN" analyze "$NG_TMP/trace" --json "$NG_TMP/report.json" >"$NG_TMP/summary" 2>&1 ||
	{ cat "$NG_TMP/summary"; fail "analyze exited $?"; }
assert_grep "hang: init of comm [0-9a-f]* never finished: ranks 0,1 waiting, rank 2 never entered it (1 not in the trace)" \
	"$NG_TMP/summary"
python3 - "$NG_TMP/report.json" <<'PY' || fail "report.json: the init hang"
import json, sys
h = json.load(open(sys.argv[1]))["hangs"]
assert len(h) == 1 and h[0]["op"] == "init", h
assert h[0]["waiting_ranks"] == [0, 1] and h[0]["missing_ranks"] == [2], h
assert h[0]["missing_comm_ranks"] == [2], h
PY
echo "init hang: rank 2 named"
