#!/bin/sh
# The kinds of findings are analyze/findings/findings.def's: the --fail-on names
# docs/cli.md lists and the completion offers are its NG_FAIL_ON lines,
# and each --fail-on name is one some NG_FINDING counts for.  The kinds
# of incomplete[] are analyze/state/incomplete.def's (below).
. "$NG_ROOT/tests/lib.sh"
DEF="$NG_ROOT/analyze/findings/findings.def"

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

# The kinds of incomplete[] are analyze/state/incomplete.def's: docs/design.md's
# list says each (stream_* covers the stream_ ones), names no other, and
# the code says each.
INC="$NG_ROOT/analyze/state/incomplete.def"
kinds=$(sed -n 's/^NG_INCOMPLETE(\([a-z_]*\),.*/\1/p' "$INC")
[ -n "$kinds" ] || fail "no NG_INCOMPLETE line in $INC"
sed -n '/^### What the report could not see/,/^### Damaged traces/p' "$NG_ROOT/docs/design.md" \
	>"$NG_TMP/sec"
[ -s "$NG_TMP/sec" ] || fail "no incomplete[] section in docs/design.md"

note "docs/design.md says each kind of incomplete[]"
for k in $kinds; do
	case $k in stream_*) pat="\`$k\`\|\`stream_\*\`" ;; *) pat="\`$k\`" ;; esac
	grep -q "$pat" "$NG_TMP/sec" || fail "docs/design.md does not list $k"
done

note "the list's entries are kinds of the table"
heads=$(sed -n 's/^- \(`[a-z_]*`\(, `[a-z_]*`\)*\):.*/\1/p' "$NG_TMP/sec" | grep -o '[a-z_]\+')
for h in $heads; do
	printf '%s\n' "$kinds" | grep -qx "$h" || fail "docs/design.md lists $h, not in $INC"
done

note "the code says each kind"
for k in $kinds; do
	grep -q "AN_INC_$k\b" "$NG_ROOT"/analyze/*.c "$NG_ROOT"/analyze/*/*.c || fail "no code says $k"
done

note "incomplete kinds are named once"
dups=$(printf '%s\n' "$kinds" | sort | uniq -d)
assert_eq "$dups" "" "incomplete kinds named twice"
