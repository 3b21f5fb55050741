#!/bin/sh
# The trace inputs that once crashed, hung or silently misled the analyzer
# (fuzz/corpus/trace-crash: the fuzzers' finds and hand-made cases, among
# them a host hardware sampler's stream whole and cut, and a rank's
# output fingerprints and heartbeats whole and cut), each
# rebuilt into a trace as fuzz/fuzz_trace.c builds it and analysed by the
# single graph and the parallel reader: no crash, no hang, exit 0 or 1
# with a message, and what was left out said.  Then a job with more calls in flight than the window.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
BASE="$NG_ROOT/fuzz/trace_base"
n=0
for input in "$NG_ROOT"/fuzz/corpus/trace-crash/*; do
	[ -f "$input" ] || continue
	name=$(basename "$input")
	note "$name"
	sel=$(od -An -tu1 -N1 "$input" | tr -d ' ')
	if [ $((sel & 129)) = 129 ]; then
		base=verify; set -- metadata channel0_0 channel0_1
	elif [ $((sel & 1)) = 1 ]; then
		base=lttng; set -- metadata ncclguard_0 ncclguard_1
	elif [ $((sel & 128)) = 128 ]; then
		base=hw; set -- metadata channel0_0 channel0_1
	else
		base=text; set -- metadata channel0_0 channel0_1
	fi
	which=$(( ((sel & 127) >> 1) % 3 + 1 ))
	d="$NG_TMP/$name"
	mkdir -p "$d"
	cp "$BASE/$base/$1" "$BASE/$base/$2" "$BASE/$base/$3" "$d/"
	eval "target=\${$which}"
	tail -c +2 "$input" > "$d/$target"
	# the single graph, then the parallel reader (a worker per stream file)
	for j in 1 2; do
		o="$NG_TMP/$name.j$j"
		mkdir -p "$o"
		timeout -k 5 60 "$NG_BIN" analyze -j $j "$d" --json "$o/report.json" \
			--chrome "$o/c.json" --html "$o/r.html" > "$o/out" 2> "$o/err"
		rc=$?
		head -n 8 "$o/err"
		[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "$name -j $j: hung (killed after 60 s)"
		[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "$name -j $j: exit $rc"
		assert_no_grep "AddressSanitizer\|runtime error" "$o/err"
		# babeltrace2's own aborts are caught and said; a crash in our
		# merge is not to be
		case $name in merge-*) assert_no_grep "crashed" "$o/err" ;; esac
		if [ "$rc" = 1 ]; then
			assert_grep "^ncclguard analyze: " "$o/err"
			[ ! -e "$o/report.json" ] || fail "$name -j $j: a report after a failed read"
		else
			python3 - "$o/report.json" "$o/err" <<'PY' || fail "$name -j $j: report.json"
import json, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
err = open(sys.argv[2]).read()
said = "skipped" in err or "implausible" in err or "left out" in err
# incomplete[] (docs/design.md, "The analyzer's findings") where the report
# has it: what stderr said was left out must be in it.
if said and "incomplete" in r:
    assert r["incomplete"], "left out, but incomplete[] is empty"
PY
		fi
	done
	n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no input in fuzz/corpus/trace-crash"
# The hardware sampler's stream whole: its changes read, by either reader.
for j in 1 2; do
	assert_eq "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["hardware"]))' \
		"$NG_TMP/hw-sampler-stream.j$j/report.json")" 5 "hw-sampler-stream -j $j: hardware[]"
done
# A rank's fingerprints whole: compared with its peer's, by either reader.
for j in 1 2; do
	assert_eq "$(python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["verification"][0]; print(v["compared"], v["mismatched"], v["unpaired"])' \
		"$NG_TMP/verify-fingerprint-stream.j$j/report.json")" "2 1 1" "verify-fingerprint-stream -j $j: verification[]"
done
# A rank's heartbeats, whole: read, none of their values implausible.
for j in 1 2; do
	assert_no_grep "implausible" "$NG_TMP/verify-heartbeat-stream.j$j/err"
done

# Rank 1 never calls seq 3; rank 0 queues 20000 calls behind it, more than
# the window holds.  The hang is seq 3, not a seq the window moved to.
note "20000 calls in flight behind a hang"
awk 'BEGIN {
	for (r = 0; r < 2; r++) {
		print r, 0, "proc", r, 2
		print r, 10, "initb abc 2", r
		print r, 20, "inite abc 2", r
		for (s = 1; s <= 2; s++) {
			print r, 100 * s, "enq abc", s, "0 allreduce 1024 -1 2 0", 100 * s
			print r, 100 * s + 50, "done abc", s, "0 allreduce 1024", 100 * s + 10, 100 * s + 40, "2 -1"
		}
	}
	for (s = 3; s <= 20002; s++)
		print 0, 1000 + s, "enq abc", s, "0 allreduce 1024 -1 2 0", 1000 + s
	print 0, 6000000, "timeout abc 3 allreduce collective"
}' > "$NG_TMP/window.txt"
"$GEN" -o "$NG_TMP/window" --ranks 2 --script "$NG_TMP/window.txt" || fail "gen"
"$NG_BIN" analyze "$NG_TMP/window" --json "$NG_TMP/window.json" > "$NG_TMP/out" 2> "$NG_TMP/err" ||
	{ cat "$NG_TMP/err"; fail "window: exit $?"; }
python3 - "$NG_TMP/window.json" <<'PY' || fail "window: the hang names the wrong seq"
import json, sys
r = json.load(open(sys.argv[1]))
h = r["hangs"]
assert len(h) == 1 and h[0]["seq"] == 3, h
assert h[0]["missing_ranks"] == [1], h
if "incomplete" in r:
    assert any(i["what"] == "window_exceeded" for i in r["incomplete"]), r["incomplete"]
PY
echo "fuzz corpus: $n inputs ok"
