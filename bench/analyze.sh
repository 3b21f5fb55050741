#!/bin/sh
# Analyzer throughput (issue 6): a synthetic trace of at least 5 million
# events in LTTng's CTF layout (8 ranks, 312,500 collectives each, two
# events per call), then on the same trace in the same run:
#   babeltrace2 DIR > /dev/null                the text dump, the baseline
#   ncclguard analyze DIR --json --html        the analysis
#   ncclguard analyze DIR (all three outputs)  plus the Chrome trace
# each with /usr/bin/time -v (wall seconds, peak RSS), after one read of
# the files to warm the page cache.  Appends a row to bench/RESULTS.md.
#
#   bench/analyze.sh [ITERS] [RANKS]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${NG_BUILD:-$ROOT/build}
ITERS=${1:-312500}
RANKS=${2:-8}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ngbench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

"$B/tests/ng_trace_gen" -o "$TMP/trace" --ranks "$RANKS" --iters "$ITERS" \
	--ops allreduce,allgather,reducescatter,broadcast \
	--sizes 1024,65536,1048576,16777216 --slow-rank 3 --slow-ms 0.5
cat "$TMP"/trace/ust/uid/0/64-bit/* > /dev/null
size=$(du -sh "$TMP/trace" | cut -f1)

measure() {	# NAME CMD...: prints "wall_s peak_mib"
	name=$1; shift
	/usr/bin/time -v "$@" > "$TMP/$name.out" 2> "$TMP/$name.time" ||
		{ cat "$TMP/$name.time" >&2; exit 1; }
	awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":");
			s = (n == 3) ? t[1] * 3600 + t[2] * 60 + t[3] : t[1] * 60 + t[2] }
		/Maximum resident set size/ { m = $2 / 1024 }
		END { printf "%.2f %.0f\n", s, m }' "$TMP/$name.time"
}

set -- $(measure bt2 babeltrace2 "$TMP/trace"); bt_s=$1; bt_m=$2
set -- $(measure an "$B/bin/ncclguard" analyze "$TMP/trace" --json "$TMP/r.json" \
	--html "$TMP/r.html"); an_s=$1; an_m=$2
set -- $(measure all "$B/bin/ncclguard" analyze "$TMP/trace"); all_s=$1; all_m=$2
events=$(awk '/"events":/ { gsub(/[^0-9]/, ""); print; exit }' "$TMP/r.json")
chrome=$(du -sh "$TMP/trace/trace.json" | cut -f1)

printf "%-44s %9s %10s\n" "command ($events events, $size of CTF)" "wall s" "peak MiB"
printf "%-44s %9s %10s\n" "babeltrace2 DIR > /dev/null" "$bt_s" "$bt_m"
printf "%-44s %9s %10s\n" "ncclguard analyze DIR --json --html" "$an_s" "$an_m"
printf "%-44s %9s %10s\n" "ncclguard analyze DIR (+ Chrome, $chrome)" "$all_s" "$all_m"
speedup=$(awk -v a="$bt_s" -v b="$an_s" 'BEGIN { printf "%.1f", a / b }')
echo "analyze is ${speedup}x faster than the text dump"
head -3 "$TMP/an.out"

R="$ROOT/bench/RESULTS.md"
[ -f "$R" ] || printf "# Benchmark results\n" > "$R"
grep -q "^## Analyzer throughput" "$R" || cat >> "$R" <<EOR

## Analyzer throughput (bench/analyze.sh, issue 6)

Goal: \`ncclguard analyze\` at least 2x faster than \`babeltrace2 DIR > /dev/null\`
on the same trace of at least 5 million events, peak memory reported.

| date | machine | events | CTF size | babeltrace2 s / MiB | analyze (json+html) s / MiB | analyze (+chrome) s / MiB | speed-up |
| --- | --- | --- | --- | --- | --- | --- | --- |
EOR
echo "| $(date -u +%Y-%m-%d) | $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m) | $events | $size | $bt_s / $bt_m | $an_s / $an_m | $all_s / $all_m | ${speedup}x |" >> "$R"
