#!/bin/sh
# Golden tests: each committed trace under traces/<case>/trace is analysed
# and the report JSON and text summary must match traces/<case>/expect.*;
# the Chrome trace must follow the trace-event format and the HTML must be
# one self-contained page.  Regenerate with make_traces.sh.
. "$NG_ROOT/tests/lib.sh"
T="$NG_ROOT/tests/analyze/traces"
n=0
for d in "$T"/*/; do
	d=${d%/}
	name=$(basename "$d")
	note "$name"
	out="$NG_TMP/$name"
	mkdir -p "$out"
	"$NG_BIN" analyze "$d/trace" --json "$out/report.json" --chrome "$out/chrome.json" \
		--html "$out/report.html" > "$out/summary.raw" 2> "$out/stderr"
	rc=$?
	[ "$rc" = 0 ] || { cat "$out/stderr"; fail "$name: analyze exited $rc"; }
	[ ! -s "$out/stderr" ] || { cat "$out/stderr"; fail "$name: wrote to stderr"; }
	# Paths into the trace (what a damaged file is named by) as TRACE.
	sed "s|$out|TMP|g; s|$d/trace|TRACE|g" "$out/summary.raw" > "$out/summary.txt"
	sed "s|$d/trace|TRACE|g" "$out/report.json" > "$out/report.norm"
	diff -u "$d/expect.json" "$out/report.norm" || fail "$name: report.json differs"
	diff -u "$d/expect.txt" "$out/summary.txt" || fail "$name: summary differs"
	python3 "$NG_ROOT/tests/analyze/check_chrome.py" "$out/chrome.json" ||
		fail "$name: Chrome trace malformed"
	# A host whose clock is 250 ms ahead: in the Chrome trace, every
	# collective's GPU slices end where they end without the skew, within
	# microseconds of rank 0's on the other host.
	[ "$name" != two_hosts ] || python3 - "$out/chrome.json" <<'PY' || fail "$name: slices not aligned"
import json, sys
ends = {}
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") == "nccl":
        ends.setdefault(e["args"]["seq"], {})[e["pid"]] = e["ts"] + e["dur"]
full = [s for s in ends if len(ends[s]) == 4]
assert len(full) == 40, len(full)
worst = max(abs(ends[s][r] - ends[s][0]) for s in full for r in range(4))
assert worst < 10, "a slice ends %.1f us from rank 0's" % worst
PY
	# Whatever the expectations say: a one-rank job has no stragglers and
	# no hangs; in the recorded jobs that ran to the end, and the one-rank
	# ones, every collective with a completion has a time.
	python3 - "$out/report.json" "$name" <<'PY' || fail "$name: report.json findings wrong"
import json, sys
r = json.load(open(sys.argv[1], encoding="utf-8")); name = sys.argv[2]
if len(r["ranks"]) == 1:
    assert not r["stragglers"] and not r["hangs"], (r["stragglers"], r["hangs"])
if name in ("real_group", "real_mixed", "real_one_rank", "one_rank_late", "real_slow_rank",
            "real_ce"):
    assert not r["hangs"], r["hangs"]
    for c in r["collectives"]:
        assert c["timed"] == c["calls"], c
# NCCL 2.30's copy-engine calls read as such, and only they.
if name == "real_ce":
    ce = sorted(c["op"] for c in r["collectives"] if c["algo"] == "CE")
    assert ce == ["allgather"] * 2 + ["alltoall"] * 2, ce
    for c in r["collectives"]:
        if c["algo"] == "CE":
            assert c["algo_label"] == "copy engine (CE)" and c["proto"] is None, c
            assert c["busbw_gbps"] > 0, c
        else:
            assert "algo_label" not in c, c
PY
	assert_grep '<svg' "$out/report.html"
	assert_no_grep '<script' "$out/report.html"
	assert_no_grep 'src="http' "$out/report.html"
	python3 -c 'import html.parser,sys; html.parser.HTMLParser().feed(open(sys.argv[1], encoding="utf-8").read())' \
		"$out/report.html" || fail "$name: HTML does not parse"
	n=$((n + 1))
done
[ "$n" -ge 6 ] || fail "only $n golden cases found"
echo "golden: $n cases"
