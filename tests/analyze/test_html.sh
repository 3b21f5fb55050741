#!/bin/sh
# report.html in a real browser: the reports of a healthy run and of hung
# runs (recorded ones from the golden traces, generated ones for a large
# job, one message size with --link-gbps, a table of hundreds of rows) are
# laid out by headless Chromium and checked on the rendered page: every
# section there, the verdict first, the missing ranks marked in the hang
# drawing, no two labels of a plot overlapping, none cut off, at most a
# screenful of table rows before a click.  A deliberately broken copy of a
# report must fail the same check.  Skipped where Chromium is not
# installed (.ci/run installs it).
. "$NG_ROOT/tests/lib.sh"
CHECK="$NG_ROOT/tests/analyze/check_html.py"
T="$NG_ROOT/tests/analyze/traces"
GEN="$NG_BUILD/tests/ng_trace_gen"
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
	echo "SKIP: chromium not installed"
	exit 0
fi
ALL=findings,hangs,bandwidth,stragglers,nccl-time,collectives,timeouts,injections,policy,ranks

# report NAME TRACE [analyze options]: $NG_TMP/NAME.html
report() {
	name=$1 trace=$2; shift 2
	"$NG_BIN" analyze "$trace" --html "$NG_TMP/$name.html" --json "$NG_TMP/$name.json" \
		--chrome "$NG_TMP/$name.chrome.json" "$@" > "$NG_TMP/$name.txt" 2>&1 ||
		{ cat "$NG_TMP/$name.txt"; fail "$name: analyze exited $?"; }
}
# check NAME [check_html.py options]
check() {
	name=$1; shift
	note "$name"
	python3 "$CHECK" "$NG_TMP/$name.html" --sections "$ALL" "$@" || fail "$name: rendered page wrong"
}

# A healthy recorded run: every operation at two sizes.
report healthy "$T/real_mixed/trace"
check healthy --verdict "Healthy" --verdict-has "Checked:" --verdict-has "Not seen:" \
	--verdict-has=--link-gbps --hang-missing 0 --text "bus bandwidth, MB/s"

# A recorded hang: rank 2 skipped a call and exited, ranks 0, 1, 3 time out.
report hung "$T/real_skip/trace"
check hung --verdict "hang: allreduce seq 6" --hang-missing 1 --text "seq 6" \
	--text "exited (its comm_end came)" --text "time from the first arrival at seq 6"
assert_grep '<td>4132e87ffe1842f9</td><td>6</td>' "$NG_TMP/hung.html"

# An injected drop: the dropping rank marked, the injection and the
# watchdogs' timeouts in their tables.
report drop "$T/drop/trace"
check drop --verdict "hang: allreduce seq 6" --hang-missing 1 \
	--text "never entered it (dropped)"
assert_grep '<td>drop</td>' "$NG_TMP/drop.html"
assert_grep '<td>5eedc0ffee123456</td><td>6</td><td>allreduce</td>' "$NG_TMP/drop.html"

# An init that one rank never began.
report init "$T/init_missing/trace"
check init --verdict "hang: init" --hang-missing 1 --text "never began its init"

# A policy decision recorded.
report policy "$T/lost_events/trace"
check policy --verdict "incomplete:"
assert_grep '<td>NCCL_DEBUG</td>' "$NG_TMP/policy.html"

# 64 ranks, one message size, a straggler, the link's speed given: one
# point per op, thin heat map rows named every few ranks.
"$GEN" -o "$NG_TMP/t64" --ranks 64 --iters 30 --ops allreduce --sizes 1048576 \
	--slow-rank 13 --slow-ms 2 > /dev/null || fail "gen t64"
report big "$NG_TMP/t64" --link-gbps 25
check big --verdict "straggler: rank 13" --text "link 25 GB/s (--link-gbps)" \
	--text "rank 13" --text "1 MiB"

# 8 operations at 31 sizes each: 248 rows, folded by operation.
"$GEN" -o "$NG_TMP/rows" --ranks 4 --iters 500 \
	--ops allreduce,allgather,broadcast,reducescatter,alltoall,reduce,gather,scatter \
	--sizes "$(python3 -c "print(','.join(str(2**i) for i in range(3, 34)))")" \
	> /dev/null || fail "gen rows"
report rows "$NG_TMP/rows" --link-gbps 50
check rows --max-rows 20 --text "4 GiB"
[ "$(grep -c '<details class="op"' "$NG_TMP/rows.html")" = 8 ] || fail "rows: not one block per op"

# 640 ranks over 80 hosts, rank 601 late: past 512 ranks the heat map
# groups neighbouring ranks, rank 601 keeps a row (and its name) of its
# own, the page says so and stays small.
"$GEN" -o "$NG_TMP/t640" --ranks 640 --iters 30 --hosts 80 --ranks-per-stream 4 \
	--slow-rank 601 --slow-ms 2 > /dev/null || fail "gen t640"
report wide "$NG_TMP/t640"
check wide --verdict "straggler: rank 601" --text "rank 601" --text "ranks 0-"
python3 - "$NG_TMP/wide.html" <<'PY' || fail "wide: heat map not grouped"
import os, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
heat = page[page.index('<section id="stragglers">'):]
heat = heat[:heat.index("</section>")]
labels = re.findall(r'class="hl[^"]*" text-anchor="end">([^<]*)</text>', heat)
rows = {int(y) for y in re.findall(r'<rect x="130\.0" y="(\d+)"', heat)}
assert "rank 601" in labels, labels
assert 'class="hl st" text-anchor="end">rank 601<' in heat, "rank 601 not marked"
assert re.search(r"ranks 600-600|ranks 59\d-600", heat) is None, "rank 601 merged"
assert "Rows grouped: 640 ranks on" in heat and "report.json" in heat
assert 1 < len(rows) <= 512, len(rows)
assert re.search(r">ranks \d+-\d+<", heat), labels
size = os.path.getsize(sys.argv[1])
assert size < 300_000, "report.html is %d bytes" % size
PY
# The ranks' table past 512 ranks: a row per host's run of ranks.
assert_grep '<tr><td>600-607</td><td>node75</td><td>8</td>' "$NG_TMP/wide.html"
assert_grep 'pid and GPU: ranks\[\] in report.json' "$NG_TMP/wide.html"
# Below 512 ranks a rank to a row, as before.
assert_no_grep "Rows grouped" "$NG_TMP/big.html"

# The check fails on a broken report: two axis labels on one spot, and a
# caption running out of its plot.
note "a broken report fails the check"
python3 - "$NG_TMP/drop.html" "$NG_TMP/broken.html" <<'PY' || fail "could not break the report"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
tick = re.search(r'<text [^>]*class="ax"[^>]*>[^<]*</text>', page)
page = page[:tick.end()] + tick.group(0) + page[tick.end():]
heat = page.index('aria-label="lateness per rank over time"')
end = page.index('</svg>', heat)
page = page[:end] + '<text x="700" y="40" class="ti">time since the first</text>' + page[end:]
open(sys.argv[2], "w", encoding="utf-8").write(page)
PY
python3 "$CHECK" "$NG_TMP/broken.html" > "$NG_TMP/broken.out" 2>&1
assert_eq "$?" 1 "the check on a broken report"
assert_grep "overlapping text" "$NG_TMP/broken.out"
assert_grep "text outside its SVG" "$NG_TMP/broken.out"
echo "html: 8 reports laid out in Chromium"
