#!/bin/sh
# Stragglers are ranks late consistently and by enough to matter, and the
# size given is the measured delay per call:
#   healthy 4-rank jobs of the CPU backend, while two busy loops compete
#   for the cores, have none;
#   an injected 20 ms delay on rank 1 names rank 1, about 20 ms late;
#   synthetic traces find their slow rank at its delay, and none without.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
EX="$NG_BUILD/bin/allreduce_example"
export LD_LIBRARY_PATH="$NG_SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# an NAME DIR: analyze DIR into NAME.txt and NAME.json
an() {
	"$NG_BIN" analyze "$2" --json "$NG_TMP/$1.json" > "$NG_TMP/$1.txt" 2> "$NG_TMP/$1.err" ||
		{ cat "$NG_TMP/$1.txt" "$NG_TMP/$1.err"; fail "$1: analyze exited $?"; }
}
# stragglers NAME: "rank:lateness_ms ..." from NAME.json
stragglers() {
	python3 -c 'import json, sys
print(" ".join("%s:%.1f" % (s["rank"], s["mean_late_us"] / 1e3)
               for s in json.load(open(sys.argv[1]))["stragglers"]))' "$NG_TMP/$1.json"
}
# near NAME RANK MS PCT: NAME names RANK alone, late by MS within PCT %
near() {
	got=$(stragglers "$1")
	python3 -c 'import sys
got, rank, ms, pct = sys.argv[1].split(), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
assert len(got) == 1, got
r, late = got[0].split(":")
assert r == rank and abs(float(late) - ms) <= ms * pct / 100, got' "$got" "$2" "$3" "$4" ||
		fail "$1: stragglers '$got', expected rank $2 about $3 ms late"
	assert_grep "straggler: rank $2 arrived last" "$NG_TMP/$1.txt"
}

note "healthy jobs on a loaded machine: no straggler"
sh -c 'while :; do :; done' &
hog1=$!
sh -c 'while :; do :; done' &
hog2=$!
NG_AT_EXIT="kill $hog1 $hog2 2>/dev/null; $NG_AT_EXIT"
for i in 1 2 3; do
	"$NG_BIN" run -o "$NG_TMP/h$i" -- "$EX" --launch 4 --iters 60 > "$NG_TMP/h$i.out" 2>&1 ||
		{ cat "$NG_TMP/h$i.out"; fail "healthy run $i failed"; }
	an h$i "$NG_TMP/h$i"
	assert_eq "$(stragglers h$i)" "" "stragglers of healthy run $i"
	assert_no_grep "straggler:" "$NG_TMP/h$i.txt"
done

note "rank 1 delayed 20 ms before each call, still loaded"
"$NG_BIN" run -o "$NG_TMP/d" --inject delay:ms=20,rank=1 -- \
	"$EX" --launch 4 --iters 3 --warmup 1 > "$NG_TMP/d.out" 2>&1 ||
	{ cat "$NG_TMP/d.out"; fail "delayed run failed"; }
kill $hog1 $hog2 2>/dev/null
an d "$NG_TMP/d"
near d 1 20 30

note "synthetic: slow ranks found at their delay"
"$GEN" -o "$NG_TMP/s4/trace" --ranks 4 --iters 24 --slow-rank 1 --slow-ms 20.3 || fail gen
an s4 "$NG_TMP/s4/trace"
near s4 1 20.3 5
"$GEN" -o "$NG_TMP/s8/trace" --ranks 8 --iters 40 --slow-rank 5 --slow-ms 2 --seed 3 || fail gen
an s8 "$NG_TMP/s8/trace"
near s8 5 2 10
"$GEN" -o "$NG_TMP/s2/trace" --ranks 2 --iters 16 --slow-rank 0 --slow-ms 1 || fail gen
an s2 "$NG_TMP/s2/trace"
near s2 0 1 10
for seed in 1 2 3; do
	"$GEN" -o "$NG_TMP/j$seed/trace" --ranks 8 --iters 100 --seed $seed || fail gen
	an j$seed "$NG_TMP/j$seed/trace"
	assert_eq "$(stragglers j$seed)" "" "stragglers of jitter only, seed $seed"
done
echo "stragglers: ok"
