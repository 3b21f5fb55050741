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
assert_grep '^analyze: [0-9]* call edge(s) between its files' "$NG_TMP/graph"
"$NG_ROOT/tools/include_graph.sh" --calls analyze "$NG_ROOT" "$NG_BUILD" >"$NG_TMP/analyze" 2>&1 \
	|| { cat "$NG_TMP/analyze"; fail "--calls analyze"; }
assert_grep '^match.c -> state.c (calls: ' "$NG_TMP/analyze"
assert_no_grep '^state.c -> \(findings\|dumps\|algo\|incomplete\).c' "$NG_TMP/analyze"
# analyze's files in stages, each including its stage's header: a file
# calls only files of its own stage or of the stages below it.
python3 - "$NG_ROOT/analyze" "$NG_TMP/analyze" <<'PY' || fail "analyze's stages"
import os, re, sys
stages = ["model.h", "state.h", "match.h", "read.h", "findings.h", "report.h"]
stage, bad = {}, []
for f in sorted(os.listdir(sys.argv[1])):
    if not f.endswith(".c"):
        continue
    inc = re.findall(r'^#include "([a-z_]+\.h)"', open(os.path.join(sys.argv[1], f)).read(), re.M)
    own = [stages.index(h) for h in inc if h in stages]
    if own:
        stage[f] = max(own)
for line in open(sys.argv[2]):
    m = re.match(r"(\S+\.c) -> (\S+\.c) \(", line)
    if m and m[1] in stage and m[2] in stage and stage[m[1]] < stage[m[2]]:
        bad.append(f"{m[1]} ({stages[stage[m[1]]]}) calls {m[2]} ({stages[stage[m[2]]]}), a stage above it")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
echo "calls: ok"
