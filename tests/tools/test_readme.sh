#!/bin/sh
# README's one line that runs a job of one's own on the CPU backend works
# as written: it records every rank, prints the summary, and the trace it
# leaves is one analyze reads.  The line is taken from README.md itself
# (build/ mapped to the build under test, the trace into a temp folder), so
# the README cannot drift from the product.
. "$NG_ROOT/tests/lib.sh"

line=$(grep '^    LD_LIBRARY_PATH=build/sim build/bin/ncclguard run ' "$NG_ROOT/README.md")
[ -n "$line" ] || fail "README.md shows no 'ncclguard run' line for the CPU backend"
assert_eq "$(printf '%s\n' "$line" | wc -l)" 1 "README lines that run a job on the CPU backend"
case $line in *" -o t "*) ;; *) fail "README's line writes no trace 't': $line" ;; esac
cmd=$(printf '%s\n' "$line" | sed -e "s#build/#$NG_BUILD/#g" -e "s# -o t # -o $NG_TMP/t #")
note "$cmd"
rc=0
(cd "$NG_TMP" && eval "$cmd") >"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
[ "$rc" = 0 ] || { cat "$NG_TMP/out" "$NG_TMP/err"; fail "README's line exited $rc"; }
assert_grep '^Time in NCCL' "$NG_TMP/out"
for r in 0 1 2 3; do
	assert_grep "^  rank $r " "$NG_TMP/out"
done
"$NG_BIN" analyze "$NG_TMP/t" --json "$NG_TMP/r.json" >"$NG_TMP/a" 2>&1 ||
	{ cat "$NG_TMP/a"; fail "analyze of README's trace"; }
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["ranks"]))' "$NG_TMP/r.json")
assert_eq "$n" 4 "ranks in README's trace"
echo "ok"
