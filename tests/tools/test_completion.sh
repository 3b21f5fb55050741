#!/bin/sh
# Bash completion (tools/ncclguard-completion.bash), sourced in bash and
# asked as bash asks it (COMP_WORDS, COMP_CWORD, then _ncclguard):
#   - the subcommands, and each one's options, are those its --help
#     prints (every --long of its usage and option lines), so they follow
#     the command;
#   - an option's value: a folder for DIR, files for FILE, the listed
#     values of --on-timeout and --fail-on (each one --help names), after
#     `run ... --` a command;
#   - an unknown subcommand gets nothing.
. "$NG_ROOT/tests/lib.sh"
command -v bash >/dev/null || fail "bash not installed"
COMP="$NG_ROOT/tools/ncclguard-completion.bash"
mkdir -p "$NG_TMP/files/dir1" "$NG_TMP/files/dir2" || fail "mkdir"
: >"$NG_TMP/files/dfile"

# The options each --help prints, found here independently of the script.
"$NG_BIN" --help >"$NG_TMP/help" 2>&1 || fail "ncclguard --help"
subs=$(sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' "$NG_TMP/help")
for s in $subs; do
	"$NG_BIN" "$s" --help >"$NG_TMP/help.$s" 2>&1 || fail "ncclguard $s --help"
	python3 - "$NG_TMP/help.$s" >"$NG_TMP/want.$s" <<'PY' || fail "options of $s --help"
import re, sys
opts, usage = {"--help"}, False
for line in open(sys.argv[1]).read().splitlines():
    usage = (usage or line.startswith("usage:")) and line != ""
    if usage or re.match(r" {2,6}(-[a-zA-Z], +)?--[a-z]", line):
        opts |= set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line))
print(" ".join(sorted(opts)))
PY
done

cat >"$NG_TMP/cases.bash" <<'EOF'
PATH="$NG_BINDIR:$PATH"
. "$COMP" || exit 1
# c WORD...: the completions of the last word, sorted, on one line
c() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=(x)
	_ncclguard || echo "_ncclguard: status $?"
	printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//'
	echo
}
complete -p ncclguard
c ncclguard ""
c ncclguard -
c ncclguard ma
for s in $SUBS; do c ncclguard "$s" --; done
c ncclguard relay --p
c ncclguard policy ""
c ncclguard run --on-timeout ""
c ncclguard run --on-timeout a
c ncclguard analyze --fail-on hang,m
c ncclguard relay -o "$F/d"
c ncclguard analyze --json "$F/d"
c ncclguard run -o x -- bas
c ncclguard frob --
c ncclguard matrix --bytes ""
for k in "${!_NCCLGUARD_VALUES[@]}"; do echo "$k ${_NCCLGUARD_VALUES[$k]}"; done >"$VALUES"
EOF
NG_BINDIR=$(dirname "$NG_BIN") COMP="$COMP" SUBS="$subs" F="$NG_TMP/files" VALUES="$NG_TMP/values" \
	bash "$NG_TMP/cases.bash" >"$NG_TMP/got" 2>"$NG_TMP/err" || { cat "$NG_TMP/err"; fail "bash"; }
[ ! -s "$NG_TMP/err" ] || { cat "$NG_TMP/err"; fail "the script wrote on stderr"; }
cat "$NG_TMP/got"

# line N of the answers
got() { sed -n "${1}p" "$NG_TMP/got"; }
assert_eq "$(got 1)" "complete -F _ncclguard ncclguard" "registered for ncclguard"
assert_eq "$(got 2)" "$(echo $subs | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" \
	"ncclguard <TAB>: the subcommands of ncclguard --help"
for s in run analyze policy doctor matrix relay watch; do
	case " $(got 2) " in *" $s "*) ;; *) fail "subcommands: $(got 2): no $s" ;; esac
done
assert_eq "$(got 3)" "--help --version" "ncclguard -<TAB>"
assert_eq "$(got 4)" "matrix" "ncclguard ma<TAB>"
n=5
for s in $subs; do
	assert_eq "$(got $n)" "$(cat "$NG_TMP/want.$s")" "ncclguard $s --<TAB>: the options of its --help"
	n=$((n + 1))
done
assert_eq "$(got $n)" "--port" "ncclguard relay --p<TAB>"
assert_eq "$(got $((n + 1)))" "check" "ncclguard policy <TAB>"
assert_eq "$(got $((n + 2)))" "abort exit warn" "ncclguard run --on-timeout <TAB>"
assert_eq "$(got $((n + 3)))" "abort" "ncclguard run --on-timeout a<TAB>"
assert_eq "$(got $((n + 4)))" "hang,mismatch" "ncclguard analyze --fail-on hang,m<TAB>"
assert_eq "$(got $((n + 5)))" "$NG_TMP/files/dir1 $NG_TMP/files/dir2" "relay -o DIR<TAB>: folders"
assert_eq "$(got $((n + 6)))" "$NG_TMP/files/dfile $NG_TMP/files/dir1 $NG_TMP/files/dir2" \
	"analyze --json FILE<TAB>: files"
case " $(got $((n + 7))) " in *" bash "*) ;; *) fail "run -- bas<TAB>: no bash in '$(got $((n + 7)))'" ;; esac
assert_eq "$(got $((n + 8)))" "" "ncclguard frob --<TAB>"
assert_eq "$(got $((n + 9)))" "" "ncclguard matrix --bytes <TAB>: a number, nothing offered"

note "the values listed in the script are those --help names"
[ -s "$NG_TMP/values" ] || fail "no values listed"
while read -r opt values; do
	# the help whose option lines give opt
	h=$(grep -l -- "^ *$opt " "$NG_TMP"/help.*) || fail "no --help gives $opt"
	for v in $values; do
		grep -qw -- "$v" $h || fail "$opt $v: not named by $(basename "$h")"
	done
	echo "$opt: $values"
done <"$NG_TMP/values"
echo ok
