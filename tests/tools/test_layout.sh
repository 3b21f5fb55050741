#!/bin/sh
# The layout holds: no include or call between modules against the
# directions README's "Layout" draws, and no cycle (tools/include_graph.sh,
# over the sources and this build's objects).
. "$NG_ROOT/tests/lib.sh"
"$NG_ROOT/tools/include_graph.sh" "$NG_ROOT" "$NG_BUILD" >"$NG_TMP/graph" 2>&1
rc=$?
cat "$NG_TMP/graph"
[ "$rc" = 0 ] || fail "the module graph breaks the layout"
# It must have seen the modules and their calls, or it proves nothing.
assert_grep '^preload/wrap -> preload/watchdog (calls:' "$NG_TMP/graph"
assert_grep '^tools -> analyze' "$NG_TMP/graph"
# And it must catch a wrong-way include: a copy of the tree with one.
mkdir -p "$NG_TMP/tree"
cp -r "$NG_ROOT/common" "$NG_ROOT/policy" "$NG_ROOT/tracer" "$NG_ROOT/session" \
	"$NG_ROOT/preload" "$NG_ROOT/analyze" "$NG_ROOT/tools" "$NG_ROOT/sim" "$NG_TMP/tree/"
printf '#include "watchdog.h"\n' >>"$NG_TMP/tree/preload/core/log.c"
if "$NG_ROOT/tools/include_graph.sh" "$NG_TMP/tree" >"$NG_TMP/bad" 2>&1; then
	cat "$NG_TMP/bad"
	fail "an include of watch.h from core/ went unnoticed"
fi
assert_grep 'forbidden: preload/core -> preload/watchdog' "$NG_TMP/bad"
assert_grep 'cycle:' "$NG_TMP/bad"
# Nor may the shim include the LTTng provider's header, only its ABI.
printf '#include "ncclguard_tp.h"\n' >>"$NG_TMP/tree/preload/core/clock.c"
"$NG_ROOT/tools/include_graph.sh" "$NG_TMP/tree" >"$NG_TMP/bad2" 2>&1
assert_grep 'preload/core/clock.c: includes ncclguard_tp.h, private to tracer/' "$NG_TMP/bad2"
echo "layout: ok"
