#!/bin/sh
# Nonblocking communicators, recorded: a comm made with config.blocking = 0
# and split from it the same way.  Each creation returns ncclInProgress,
# recorded as such (a split's size and rank unknown then), and ends again
# when ncclCommGetAsyncError says the comm is ready: a second
# comm_init_end with its size and rank.  The calls on the split comm
# carry its size, and the analyzer sees a 2-rank comm with no hang.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/preload/job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
# debug: each process names its pid (a shared session daemon's trace may
# hold other processes' events).
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_LOG=debug \
	WORLD_SIZE=2
rc=0
# The work of each creation is held 200 ms, so that every call returns
# before its comm is ready, however the ranks are scheduled.
NCCLSIM_NONBLOCKING_HOLD_US=200000 \
timeout -k 5 60 "$NG_BIN" run -o "$NG_TMP/trace" -- sh -c '
	RANK=0 "$1" "$2" 3 --nonblocking --split & a=$!
	RANK=1 "$1" "$2" 3 --nonblocking --split & b=$!
	wait $a; ra=$?; wait $b; rb=$?
	echo "exit $ra $rb"' sh "$JOB" "$NG_TMP/nb.id" >"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
assert_grep "exit 0 0" "$NG_TMP/out"
ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"
sed -n 's/^ncclguard\[rank [0-9?]* pid \([0-9]*\)\].*/\1/p' "$NG_TMP/err" | sort -u >"$NG_TMP/pids"
[ "$(wc -l <"$NG_TMP/pids")" = 2 ] || { cat "$NG_TMP/err"; fail "want the pids of 2 ranks"; }

# One line per init end or enqueue of ours: event vpid kind comm result nranks rank
awk 'NR == FNR { mine[$1] = 1; next }
/ ncclguard:(comm_init_end|coll_enqueue):/ {
	ev = $0; sub(/^.* ncclguard:/, "", ev); sub(/:.*/, "", ev)
	if (!(v("vpid") in mine)) next
	print ev, v("vpid"), v("kind"), v("comm_hash"), v("result"), v("nranks"), v("rank")
}
function v(k,  m) {
	if (match($0, k " = [^,}]*")) { m = substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3); gsub(/"/, "", m); return m }
	return "-"
}' "$NG_TMP/pids" "$NG_TMP/text" >"$NG_TMP/ev"

note "each creation ends twice: in progress, then ready with its size and rank"
for p in $(cat "$NG_TMP/pids"); do
	for k in initconfig split; do
		awk -v p="$p" -v k="$k" '$1 == "comm_init_end" && $2 == p && $3 == k { print $5, $6 }' \
			"$NG_TMP/ev" >"$NG_TMP/ends"
		[ "$(sed -n 1p "$NG_TMP/ends" | cut -d' ' -f1)" = 7 ] &&
			[ "$(sed -n 2p "$NG_TMP/ends")" = "0 2" ] && [ "$(wc -l <"$NG_TMP/ends")" = 2 ] ||
			{ cat "$NG_TMP/ends"; fail "pid $p $k: want an end with result 7, then one with result 0 and 2 ranks"; }
	done
	# The split's first end cannot know its size: the second one does.
	awk -v p="$p" '$1 == "comm_init_end" && $2 == p && $3 == "split"' "$NG_TMP/ev" | head -1 |
		awk '{ exit !($6 == 0 && $7 == -1) }' || fail "pid $p: the split's first end: nranks 0, rank -1"
done
awk '$1 == "comm_init_end" && $3 == "split" && $5 == 0 { print $7 }' "$NG_TMP/ev" | sort >"$NG_TMP/split_ranks"
printf '0\n1\n' | cmp -s - "$NG_TMP/split_ranks" || { cat "$NG_TMP/split_ranks"; fail "the split's ranks"; }

note "the calls on the split comm carry its size"
split=$(awk '$1 == "comm_init_end" && $3 == "split" { print $4; exit }' "$NG_TMP/ev")
assert_eq "$(awk -v c="$split" '$1 == "coll_enqueue" && $4 == c && $6 == 2' "$NG_TMP/ev" | wc -l)" 6 \
	"all-reduces on the split comm recorded with 2 ranks"
assert_eq "$(awk '$1 == "coll_enqueue"' "$NG_TMP/ev" | wc -l)" 6 "all-reduces recorded"

note "the analyzer: a 2-rank comm, every call matched, no hang"
"$NG_BIN" analyze "$NG_TMP/trace" --json "$NG_TMP/report.json" >"$NG_TMP/summary" 2>&1 ||
	{ cat "$NG_TMP/summary"; fail "analyze exited $?"; }
grep -q "hang:" "$NG_TMP/summary" && { cat "$NG_TMP/summary"; fail "a hang reported"; }
python3 - "$NG_TMP/report.json" <<'PY' || fail "report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["hangs"], r["hangs"]
rows = [c for c in r["collectives"] if c["op"] == "allreduce"]
assert len(rows) == 1 and rows[0]["calls"] == 3, rows
PY

note "a split done before its call returns: registered when polled, never reported as hung"
# Each creation's work ends before ncclInProgress is returned; the ranks then
# idle 2 s with the comms alive, past the 1 s init timeout.
rc=0
NCCLSIM_NONBLOCKING_RETURN_US=100000 NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_DUMP_DIR="$NG_TMP" \
timeout -k 5 60 "$NG_BIN" run -o "$NG_TMP/trace2" -- sh -c '
	RANK=0 "$1" "$2" 2 --nonblocking --split --sleep 2 & a=$!
	RANK=1 "$1" "$2" 2 --nonblocking --split --sleep 2 & b=$!
	wait $a; ra=$?; wait $b; rb=$?
	echo "exit $ra $rb"' sh "$JOB" "$NG_TMP/nb2.id" >"$NG_TMP/out2" 2>"$NG_TMP/err2" || rc=$?
assert_grep "exit 0 0" "$NG_TMP/out2"
grep -q "still initializing" "$NG_TMP/err2" && { cat "$NG_TMP/err2"; fail "a ready comm reported as initializing"; }
"$NG_BIN" analyze "$NG_TMP/trace2" >"$NG_TMP/summary2" 2>&1 || { cat "$NG_TMP/summary2"; fail "analyze exited $?"; }
grep -q "hang:" "$NG_TMP/summary2" && { cat "$NG_TMP/summary2"; fail "a hang reported"; }
assert_grep "2 collectives matched" "$NG_TMP/summary2"
echo "nonblocking init and split recorded"
