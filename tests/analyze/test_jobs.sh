#!/bin/sh
# `analyze -j N`: the traces decoded by N processes give what one graph
# gives.  On every golden trace and on generated ones (several hosts with
# a hang and a straggler; one host's trace split by stream files; a job's
# events mixed with another's), -j 1 and -j 4 write the same report.json
# and summary; a trace damaged mid-stream is read both ways alike, its
# loss said; bad -j values are usage errors.
. "$NG_ROOT/tests/lib.sh"
T="$NG_ROOT/tests/analyze/traces"
GEN="$NG_BUILD/tests/ng_trace_gen"

# 16 ranks over 4 hosts: rank 13 never enters the last allreduce, rank 3
# is slow.
"$GEN" -o "$NG_TMP/hosts/trace" --ranks 16 --hosts 4 --iters 60 --skip-last 13 \
	--slow-rank 3 --slow-ms 5 --clock-error-ms 1 || fail "gen hosts"
# one host, 32 stream files: split into views by file
"$GEN" -o "$NG_TMP/files/trace" --ranks 32 --iters 40 --mismatch 5:20:7 || fail "gen files"
# two jobs in one folder, the smaller first
"$GEN" -o "$NG_TMP/twojobs/trace/a" --ranks 2 --iters 10 --job small || fail "gen job a"
"$GEN" -o "$NG_TMP/twojobs/trace/b" --ranks 6 --iters 10 --job big --hosts 2 \
	--start-ms 5 --vpid-base 5000 || fail "gen job b"

# same NAME DIR: -j 1 and -j 4 agree on DIR
same() {
	name=$1 d=$2
	for j in 1 4; do
		NCCLGUARD_ANALYZE_VERBOSE=1 TMPDIR="$NG_TMP/views" "$NG_BIN" analyze "$d" -j $j --json "$NG_TMP/r.json" \
			> "$NG_TMP/$name.$j.out" 2> "$NG_TMP/$name.$j.err"
		echo "rc $?" >> "$NG_TMP/$name.$j.out"
		mv "$NG_TMP/r.json" "$NG_TMP/$name.$j.json" 2>/dev/null
	done
	assert_no_grep "readers over" "$NG_TMP/$name.1.err"
	[ -z "$(ls "$NG_TMP/views")" ] || fail "$name: views left in \$TMPDIR"
	diff -u "$NG_TMP/$name.1.out" "$NG_TMP/$name.4.out" || fail "$name: summary differs"
	if [ -e "$NG_TMP/$name.1.json" ] || [ -e "$NG_TMP/$name.4.json" ]; then
		diff -u "$NG_TMP/$name.1.json" "$NG_TMP/$name.4.json" ||
			fail "$name: report.json differs"
	fi
	grep -v "readers over" "$NG_TMP/$name.4.err" > "$NG_TMP/$name.4.err2"
	diff -u "$NG_TMP/$name.1.err" "$NG_TMP/$name.4.err2" || fail "$name: stderr differs"
}

mkdir -p "$NG_TMP/views"
n=0
for d in "$T"/*/; do
	d=${d%/}
	same "$(basename "$d")" "$d/trace"
	n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n golden traces"

note "4 hosts, a hang and a straggler"
same hosts "$NG_TMP/hosts/trace"
assert_grep "4 readers over [4-8] parts of 4 traces" "$NG_TMP/hosts.4.err"
assert_grep "16 ranks on 4 hosts" "$NG_TMP/hosts.4.out"
assert_grep "hang: allreduce seq .* rank 13 never entered" "$NG_TMP/hosts.4.out"
python3 - "$NG_TMP/hosts.4.json" <<'PY' || fail "hosts: findings missing"
import json, sys
r = json.load(open(sys.argv[1]))
kinds = {f["kind"] for f in r["findings"]}
assert "hang" in kinds and "straggler" in kinds, kinds
PY

note "one trace split by stream files"
same files "$NG_TMP/files/trace"
assert_grep "4 readers over 4 parts of 1 trace$" "$NG_TMP/files.4.err"
assert_grep "32 ranks" "$NG_TMP/files.4.out"

note "two jobs: the one with most processes"
same twojobs "$NG_TMP/twojobs/trace"
assert_grep "readers over" "$NG_TMP/twojobs.4.err"
assert_grep "other_job" "$NG_TMP/twojobs.4.json"

note "a trace damaged mid-stream"
"$GEN" -o "$NG_TMP/bad/trace" --ranks 8 --hosts 2 --iters 20 || fail "gen bad"
f="$NG_TMP/bad/trace/node1/ust/uid/0/64-bit/channel0_1"
[ -f "$f" ] || f=$(find "$NG_TMP/bad/trace" -name 'channel0_1' | tail -1)
printf '\377%.0s' $(seq 1 64) | dd of="$f" bs=1 seek=433 conv=notrunc 2>/dev/null
same bad "$NG_TMP/bad/trace"
assert_grep "readers over" "$NG_TMP/bad.4.err"
assert_grep "rc 0" "$NG_TMP/bad.4.out"
assert_grep "/channel0_1: .*\\(implausible\\|not readable\\)" "$NG_TMP/bad.4.err"
python3 - "$NG_TMP/bad.4.json" <<'PY' || fail "bad: its loss not in incomplete[]"
import json, sys
inc = json.load(open(sys.argv[1]))["incomplete"]
assert any("channel0_1" in i["detail"] for i in inc), inc
PY

note "bad -j values"
for v in 0 -1 abc 1x ""; do
	"$NG_BIN" analyze "$NG_TMP/hosts/trace" -j "$v" > "$NG_TMP/out" 2> "$NG_TMP/err"
	assert_eq "$?" 2 "-j '$v': exit status"
	assert_grep "expected a number of processes" "$NG_TMP/err"
done
"$NG_BIN" analyze "$NG_TMP/hosts/trace" --jobs > "$NG_TMP/out" 2> "$NG_TMP/err"
assert_eq "$?" 2 "--jobs without a value: exit status"
"$NG_BIN" analyze "$NG_TMP/hosts/trace" --jobs=2 --json "$NG_TMP/j2.json" > "$NG_TMP/out" ||
	fail "--jobs=2: exit $?"
cmp -s "$NG_TMP/j2.json" "$NG_TMP/hosts.1.json" || fail "--jobs=2 differs from -j 1"
echo "-j 1 and -j 4 agree: $n golden traces and 4 generated"
