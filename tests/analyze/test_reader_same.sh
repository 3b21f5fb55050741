#!/bin/sh
# The two readers agree: on every golden trace and two generated ones
# (64 stream files with a hang; 512 ranks over 64 hosts sharing 128),
# merge.c's heap and babeltrace2's muxer (NCCLGUARD_ANALYZE_MUXER=1, the
# reference) give the same report.json, summary and Chrome trace events.
. "$NG_ROOT/tests/lib.sh"
T="$NG_ROOT/tests/analyze/traces"
"$NG_BUILD/tests/ng_trace_gen" -o "$NG_TMP/gen64/trace" --ranks 64 --iters 200 --skip-last 9 \
	--mismatch 3:100:7 --hosts 2 --clock-error-ms 2 || fail "gen"
# 512 ranks over 64 hosts, 4 ranks to a stream file (LTTng's per-UID
# buffers): the streams interleave processes, told apart by vpid.
"$NG_BUILD/tests/ng_trace_gen" -o "$NG_TMP/shared/trace" --ranks 512 --hosts 64 \
	--ranks-per-stream 4 --iters 12 --skip-last 300 || fail "gen shared"
[ "$(find "$NG_TMP/shared/trace" -name 'channel0_*' | wc -l)" = 128 ] || fail "not 128 files"
n=0
for d in "$T"/*/ "$NG_TMP/gen64/" "$NG_TMP/shared/"; do
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
[ "$n" -ge 8 ] || fail "only $n cases"
grep -q "512 ranks on 64 hosts" "$NG_TMP/shared.merge/summary" || fail "shared: not 512 ranks"
grep -q "hang: allreduce seq 12 .* rank 300 never entered" "$NG_TMP/shared.merge/summary" ||
	{ cat "$NG_TMP/shared.merge/summary"; fail "shared: hang not found"; }
echo "readers agree: $n traces"
