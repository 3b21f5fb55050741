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
	sed "s|$out|TMP|g" "$out/summary.raw" > "$out/summary.txt"
	diff -u "$d/expect.json" "$out/report.json" || fail "$name: report.json differs"
	diff -u "$d/expect.txt" "$out/summary.txt" || fail "$name: summary differs"
	python3 "$NG_ROOT/tests/analyze/check_chrome.py" "$out/chrome.json" ||
		fail "$name: Chrome trace malformed"
	assert_grep '<svg' "$out/report.html"
	assert_no_grep '<script' "$out/report.html"
	assert_no_grep 'src="http' "$out/report.html"
	python3 -c 'import html.parser,sys; html.parser.HTMLParser().feed(open(sys.argv[1]).read())' \
		"$out/report.html" || fail "$name: HTML does not parse"
	n=$((n + 1))
done
[ "$n" -ge 6 ] || fail "only $n golden cases found"
echo "golden: $n cases"
