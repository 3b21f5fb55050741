#!/bin/sh
# The kinds of findings are analyze/findings.def's: the --fail-on names
# docs/cli.md lists and the completion offers are its NG_FAIL_ON lines,
# and each --fail-on name is one some NG_FINDING counts for.
. "$NG_ROOT/tests/lib.sh"
DEF="$NG_ROOT/analyze/findings.def"

names=$(sed -n 's/^NG_FAIL_ON(\([a-z_]*\),.*/\1/p' "$DEF" | tr '\n' ' ')
[ -n "$names" ] || fail "no NG_FAIL_ON line in $DEF"

note "docs/cli.md's --fail-on row"
row=$(grep '^| `--fail-on KINDS`' "$NG_ROOT/docs/cli.md") || fail "no --fail-on row in docs/cli.md"
docs=$(printf '%s\n' "$row" | sed 's/([^)]*)//g; s/^[^:]*: *//' | grep -o '`[a-z_]*`' |
	tr -d '`' | grep -vx any | tr '\n' ' ')
assert_eq "$docs" "$names" "docs/cli.md --fail-on kinds"

note "the completion's --fail-on values"
comp=$(sed -n 's/^[[:space:]]*\[--fail-on\]="\(.*\)"$/\1/p' "$NG_ROOT/tools/ncclguard-completion.bash")
assert_eq "$comp" "${names}any" "completion --fail-on values"

note "--help names them"
"$NG_BIN" analyze --help >"$NG_TMP/help" || fail "analyze --help"
for n in $names; do
	assert_grep "[ :]$n[ ,]" "$NG_TMP/help"
done

note "each --fail-on name counts some kind"
for n in $names; do
	grep -q "^NG_FINDING([a-z_]*, $n," "$DEF" || fail "--fail-on $n counts no finding kind"
done

note "kinds are named once"
dups=$(sed -n 's/^NG_FINDING(\([a-z_]*\),.*/\1/p' "$DEF" | sort | uniq -d)
assert_eq "$dups" "" "kinds named twice"
