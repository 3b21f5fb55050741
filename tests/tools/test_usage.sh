#!/bin/sh
# A usage error, in every subcommand, is one line on stderr that names the
# problem and points to --help, with exit status 2; --help prints the
# whole text on stdout and exits 0.
. "$NG_ROOT/tests/lib.sh"

# bad CMD ARGS...: the one-line usage error of `ncclguard CMD`.
bad() {
	cmd=$1
	rc=0
	"$NG_BIN" "$@" >"$NG_TMP/o" 2>"$NG_TMP/e" || rc=$?
	assert_eq "$rc" 2 "ncclguard $*: exit status"
	assert_eq "$(wc -l <"$NG_TMP/e")" 1 "ncclguard $*: lines on stderr"
	assert_eq "$(wc -c <"$NG_TMP/o")" 0 "ncclguard $*: bytes on stdout"
	case $cmd in
	run|analyze|policy|doctor)
		assert_grep "^ncclguard $cmd: .*; see \`ncclguard $cmd --help\`$" "$NG_TMP/e" ;;
	*) assert_grep "^ncclguard: .*; see \`ncclguard --help\`$" "$NG_TMP/e" ;;
	esac
}

note "the command itself"
bad ""
bad frob
assert_grep "unknown command 'frob'" "$NG_TMP/e"

note "run"
bad run
bad run --bogus -- true
assert_grep "unknown option '--bogus'" "$NG_TMP/e"
bad run -x -- true
bad run --timeout
assert_grep "timeout needs a value" "$NG_TMP/e"
bad run --timeout 5s -- true
bad run --on-timeout later -- true
bad run --inject nothing -- true

note "analyze"
bad analyze
bad analyze --bogus
bad analyze DIR --json
bad analyze DIR --fail-on everything
bad analyze DIR --link-gbps -1

note "policy"
bad policy
bad policy lint
bad policy check
bad policy check a.conf b.conf
bad policy check a.conf --local-ranks 0
bad policy check a.conf --bogus

note "doctor"
bad doctor now
bad doctor --bogus
bad doctor --json
assert_grep "json needs a file" "$NG_TMP/e"
bad doctor --policy ""
bad doctor --compare
bad doctor --json x.json --compare a.json b.json

note "--help: the whole text, on stdout"
for cmd in "" run analyze policy doctor; do
	rc=0
	"$NG_BIN" $cmd --help >"$NG_TMP/o" 2>"$NG_TMP/e" || rc=$?
	assert_eq "$rc" 0 "ncclguard $cmd --help: exit status"
	[ "$(wc -l <"$NG_TMP/o")" -gt 1 ] || fail "ncclguard $cmd --help: no text"
	assert_eq "$(wc -c <"$NG_TMP/e")" 0 "ncclguard $cmd --help: bytes on stderr"
done
echo ok
