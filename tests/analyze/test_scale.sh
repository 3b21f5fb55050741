# Stragglers at scale: 256 ranks with nothing but arrival jitter have
# none (each rank is a test; three standard deviations per rank flagged a
# few in every such job), and one rank 50 us late is still found.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
for seed in 1 2 3 4; do
	note "256 ranks, jitter only, seed $seed"
	"$GEN" -o "$NG_TMP/j$seed/trace" --ranks 256 --iters 100 --seed $seed
	"$NG_BIN" analyze "$NG_TMP/j$seed/trace" --json "$NG_TMP/j$seed/r.json" >"$NG_TMP/j$seed/out" 2>&1 ||
		{ cat "$NG_TMP/j$seed/out"; fail "analyze exited $?"; }
	assert_no_grep "straggler:" "$NG_TMP/j$seed/out"
	python3 -c 'import json,sys; s = json.load(open(sys.argv[1]))["stragglers"]; assert s == [], s' \
		"$NG_TMP/j$seed/r.json" || fail "seed $seed: stragglers in report.json"
done
note "256 ranks, rank 77 late by 50 us"
"$GEN" -o "$NG_TMP/slow/trace" --ranks 256 --iters 100 --slow-rank 77 --slow-ms 0.05
"$NG_BIN" analyze "$NG_TMP/slow/trace" >"$NG_TMP/slow/out" 2>&1 || fail "analyze exited $?"
assert_grep "straggler: rank 77 arrived last" "$NG_TMP/slow/out"
assert_eq "$(grep -c 'straggler:' "$NG_TMP/slow/out")" 1 "stragglers found"
echo "scale: ok"
