#!/bin/sh
# The two readers agree: on every golden trace (and a generated one of
# 64 stream files with a hang), merge.c's heap and babeltrace2's muxer
# (NCCLGUARD_ANALYZE_MUXER=1, the reference) give the same report.json,
# summary and Chrome trace events.
. "$NG_ROOT/tests/lib.sh"
T="$NG_ROOT/tests/analyze/traces"
"$NG_BUILD/tests/ng_trace_gen" -o "$NG_TMP/gen64/trace" --ranks 64 --iters 200 --skip-last 9 \
	--mismatch 3:100:7 --hosts 2 --clock-error-ms 2 || fail "gen"
n=0
for d in "$T"/*/ "$NG_TMP/gen64/"; do
	d=${d%/}
	name=$(basename "$d")
	for r in merge muxer; do
		o="$NG_TMP/$name.$r"
		mkdir -p "$o"
		mux=0
		[ "$r" = muxer ] && mux=1
		NCCLGUARD_ANALYZE_MUXER=$mux "$NG_BIN" analyze "$d/trace" --json "$o/r.json" \
			--chrome "$NG_TMP/$name.$r.chrome.json" > "$o/summary" 2>&1
		echo $? > "$o/rc"
		grep -av "^Wrote:" "$o/summary" > "$o/summary.txt"
	done
	a="$NG_TMP/$name.merge" b="$NG_TMP/$name.muxer"
	assert_eq "$(cat "$a/rc")" "$(cat "$b/rc")" "$name: exit status"
	diff -u "$b/r.json" "$a/r.json" || fail "$name: report.json differs"
	diff -u "$b/summary.txt" "$a/summary.txt" || fail "$name: summary differs"
	python3 - "$NG_TMP/$name.muxer.chrome.json" "$NG_TMP/$name.merge.chrome.json" <<'PY' ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
key = lambda d: sorted(json.dumps(e, sort_keys=True) for e in d["traceEvents"])
assert key(a) == key(b), "events differ"
PY
		fail "$name: Chrome trace differs"
	n=$((n + 1))
done
[ "$n" -ge 7 ] || fail "only $n cases"
echo "readers agree: $n traces"
