#!/bin/sh
# No call cycle between the files of one module (tools/include_graph.sh
# over this build's objects), and the check does catch one: two objects
# of a module that call each other.
. "$NG_ROOT/tests/lib.sh"
# Two files of sim/ in a tree of their own, each calling the other.
mkdir -p "$NG_TMP/tree/sim" "$NG_TMP/build/obj/sim"
printf 'int up(int n);\nint down(int n) { return n ? up(n - 1) : 0; }\n' \
	>"$NG_TMP/tree/sim/low.c"
printf 'int down(int n);\nint up(int n) { return down(n); }\n' >"$NG_TMP/tree/sim/high.c"
for f in low high; do
	cc -c "$NG_TMP/tree/sim/$f.c" -o "$NG_TMP/build/obj/sim/$f.o" || fail "cc $f.c"
done
if "$NG_ROOT/tools/include_graph.sh" "$NG_TMP/tree" "$NG_TMP/build" >"$NG_TMP/bad" 2>&1; then
	cat "$NG_TMP/bad"
	fail "a call cycle between low.c and high.c went unnoticed"
fi
assert_grep '^call cycle in sim: high.c -> low.c -> high.c' "$NG_TMP/bad"
"$NG_ROOT/tools/include_graph.sh" --calls sim "$NG_TMP/tree" "$NG_TMP/build" \
	>"$NG_TMP/bad_sim" 2>&1 && fail "--calls sim passed on a cycle"
assert_grep '^low.c -> high.c (calls: up)' "$NG_TMP/bad_sim"
assert_grep '^cycle: high.c -> low.c -> high.c' "$NG_TMP/bad_sim"
# With the call taken out, the same two files are layers.
printf 'int down(int n) { return n; }\n' >"$NG_TMP/tree/sim/low.c"
cc -c "$NG_TMP/tree/sim/low.c" -o "$NG_TMP/build/obj/sim/low.o" || fail "cc low.c"
"$NG_ROOT/tools/include_graph.sh" --calls sim "$NG_TMP/tree" "$NG_TMP/build" \
	>"$NG_TMP/sim" 2>&1 || { cat "$NG_TMP/sim"; fail "--calls sim failed without a cycle"; }
assert_grep '^layer 0: low.c' "$NG_TMP/sim"
assert_grep '^layer 1: high.c' "$NG_TMP/sim"
# The tree itself: every module's files in layers, and it saw them.
"$NG_ROOT/tools/include_graph.sh" "$NG_ROOT" "$NG_BUILD" >"$NG_TMP/graph" 2>&1
rc=$?
grep -v '^[^ ]* -> ' "$NG_TMP/graph"
[ "$rc" = 0 ] || fail "the call graph inside a module has a cycle"
# analyze's stages are modules of their own: the calls between them run
# one way (the layout above), and inside each the files call down.
assert_grep '^analyze/match: [0-9]* call edge(s) between its files' "$NG_TMP/graph"
assert_grep '^analyze/read -> analyze/match (calls: ' "$NG_TMP/graph"
assert_grep '^analyze/report -> analyze/findings (calls: ' "$NG_TMP/graph"
assert_no_grep '^analyze/state -> analyze/\(match\|read\|findings\|report\) (calls' "$NG_TMP/graph"
"$NG_ROOT/tools/include_graph.sh" --calls analyze/match "$NG_ROOT" "$NG_BUILD" >"$NG_TMP/match" 2>&1 \
	|| { cat "$NG_TMP/match"; fail "--calls analyze/match"; }
assert_grep '^match.c -> clock.c (calls: ' "$NG_TMP/match"
assert_grep '^layer 0: ' "$NG_TMP/match"
echo "calls: ok"
