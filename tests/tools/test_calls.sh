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
# an_priv.h lists analyze's files in stages, each calling only files
# below it: every file there, and no call up the list.
python3 - "$NG_ROOT/analyze" "$NG_TMP/analyze" <<'PY' || fail "an_priv.h's list of files"
import os, re, sys
text = open(os.path.join(sys.argv[1], "an_priv.h")).read()
text = text[:text.index("*/")]
order = []
for f in re.findall(r"\b([a-z_0-9]+\.c)\b", text[text.index("   top\n"):]):
    if f not in order:
        order.append(f)
bad = [f"{f}: not in an_priv.h's list" for f in sorted(os.listdir(sys.argv[1]))
       if f.endswith(".c") and f not in order]
for line in open(sys.argv[2]):
    m = re.match(r"(\S+\.c) -> (\S+\.c) \(", line)
    if m and m[1] in order and m[2] in order and order.index(m[1]) > order.index(m[2]):
        bad.append(f"{m[1]} calls {m[2]}, listed above it in an_priv.h")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
echo "calls: ok"
