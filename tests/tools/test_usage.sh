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

# The examples a user copies answer the same way, usage in hand: --help
# prints it on stdout (exit 0), a usage error names the problem and
# prints it on stderr (exit 2).  Python's need no PyTorch for that.
note "the examples: --help and usage errors"
EX="$NG_BUILD/bin/allreduce_example"
[ -x "$EX" ] || fail "$EX not built"
# ex_rc EXPECTED CMD...: runs an example into o/e, checks its status.
# It links libnccl.so.2 as any NCCL program does: the CPU backend's here,
# which a machine without NCCL has nowhere else.
ex_rc() {
	want=$1; shift
	rc=0
	LD_LIBRARY_PATH="$NG_SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$@" >"$NG_TMP/o" 2>"$NG_TMP/e" </dev/null || rc=$?
	assert_eq "$rc" "$want" "$*: exit status"
}
for h in --help -h; do
	ex_rc 0 "$EX" $h
	assert_grep "^usage: .*allreduce_example \[OPTIONS\]" "$NG_TMP/o"
	for w in --launch --id-file --id-tcp --op --mixed --dtype --redop --min-bytes \
		--max-bytes --step-factor --iters --warmup --check --sync --group --split \
		--skip-seq --skip-rank --exit-code; do
		assert_grep "$w" "$NG_TMP/o"
	done
	assert_eq "$(wc -c <"$NG_TMP/e")" 0 "allreduce_example $h: bytes on stderr"
done
# ex_bad MESSAGE ARGS...: a usage error of allreduce_example.
ex_bad() {
	msg=$1; shift
	ex_rc 2 "$EX" "$@"
	assert_eq "$(head -n 1 "$NG_TMP/e" | grep -c -- "$msg")" 1 "allreduce_example $*: first line"
	assert_grep "^usage: " "$NG_TMP/e"
	assert_eq "$(wc -c <"$NG_TMP/o")" 0 "allreduce_example $*: bytes on stdout"
}
ex_bad "unknown option '--bogus'" --bogus
ex_bad "unknown option '--bogus'" --bogus 3
ex_bad "unknown option 'stray'" stray
ex_bad "--iters needs a value" --iters
ex_bad "--iters 'ten': expected a whole number" --iters ten
ex_bad "--launch '0': expected a whole number of at least 1" --launch 0
ex_bad "--max-bytes '1Q': expected a size" --max-bytes 1Q
ex_bad "--step-factor '1': expected a number above 1" --step-factor 1
ex_bad "--op: unknown value 'allreduce2'" --op allreduce2
for py in train_ddp graph_capture; do
	for h in --help -h; do
		ex_rc 0 python3 "$NG_ROOT/examples/$py.py" $h
		assert_grep "^usage: $py.py" "$NG_TMP/o"
	done
	[ $py = graph_capture ] || assert_grep "--steps" "$NG_TMP/o"
	ex_rc 2 python3 "$NG_ROOT/examples/$py.py" --bogus
	assert_grep "^usage: $py.py" "$NG_TMP/e"
	assert_grep "unrecognized arguments: --bogus" "$NG_TMP/e"
done
echo ok
