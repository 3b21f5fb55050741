#!/bin/sh
# The analyzer at scale (issue 27): a trace of about EVENTS events over
# STREAMS stream files (one rank per file, ng_trace_gen), then on it
#   babeltrace2 DIR -o dummy                 babeltrace2's decoding alone
#   ncclguard analyze DIR                    default outputs (Chrome under its cap)
#   ncclguard analyze DIR --chrome-all       the full Chrome trace
#   NCCLGUARD_ANALYZE_MUXER=1 ... analyze    through babeltrace2's muxer
#   $BASE analyze DIR                        another build (before), if BASE is set
# each with /usr/bin/time -v after one read of the files to warm the
# page cache: wall seconds, us per event, peak RSS.  Prints a table.
#
#   bench/analyze_scale.sh STREAMS [EVENTS]       BASE=/path/to/old/ncclguard
#   K=4 HOSTS=512 bench/analyze_scale.sh 1024     4,096 ranks, 4 to a file
#   JOBS="1 2 16" bench/analyze_scale.sh 256      only babeltrace2 and
#       `analyze -j N --json` for each N, with the peak RSS of all its
#       processes together (sampled every 0.1 s) next to the largest one's
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${NG_BUILD:-$ROOT/build}
STREAMS=${1:?streams}
EVENTS=${2:-2000000}
K=${K:-1}
HOSTS=${HOSTS:-1}
RANKS=$((STREAMS * K))
ITERS=$((EVENTS / RANKS / 2))
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ngscale.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

"$B/tests/ng_trace_gen" -o "$TMP/trace" --ranks "$RANKS" --iters "$ITERS" \
	--hosts "$HOSTS" --ranks-per-stream "$K" \
	--ops allreduce,allgather,reducescatter,broadcast \
	--sizes 1024,65536,1048576,16777216 --slow-rank 3 --slow-ms 0.5
find "$TMP/trace" -type f -exec cat {} + > /dev/null
size=$(du -sh "$TMP/trace" | cut -f1)
events=$((ITERS * RANKS * 2))

# GNU time's two lines that row() reads; python3 where it is missing (the
# GPU machine's image).
timev() {
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -v "$@"
		return
	fi
	python3 -c '
import resource, subprocess, sys, time
t = time.time()
rc = subprocess.call(sys.argv[1:])
s = time.time() - t
m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("\tElapsed (wall clock) time (h:mm:ss or m:ss): %d:%05.2f" % (s // 60, s % 60), file=sys.stderr)
print("\tMaximum resident set size (kbytes): %d" % m, file=sys.stderr)
sys.exit(rc)' "$@"
}

row() {	# NAME CMD...
	name=$1; shift
	timev "$@" > "$TMP/out" 2> "$TMP/time" || { cat "$TMP/time" >&2; exit 1; }
	awk -F': ' -v n="$name" -v ev="$events" '
		/Elapsed \(wall clock\)/ { k = split($2, t, ":");
			s = (k == 3) ? t[1] * 3600 + t[2] * 60 + t[3] : t[1] * 60 + t[2] }
		/Maximum resident set size/ { m = $2 / 1024 }
		END { printf "%-40s %8.2f %8.2f %8.0f\n", n, s, s * 1e6 / ev, m }' "$TMP/time"
}

# The peak of the summed RSS of a command and its children (MiB), sampled.
tree_rss() {	# CMD...
	"$@" > "$TMP/out" 2> "$TMP/err" &
	pid=$!
	peak=0
	while kill -0 "$pid" 2>/dev/null; do
		kb=$(ps -o rss= --pid "$pid" --ppid "$pid" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
		[ "$kb" -gt "$peak" ] && peak=$kb
		sleep 0.1
	done
	wait "$pid" || { cat "$TMP/err" >&2; exit 1; }
	echo $((peak / 1024))
}

if [ -n "${JOBS:-}" ]; then
	echo "$STREAMS stream files ($RANKS ranks, $HOSTS hosts), $events events, $size of CTF; load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
	printf "%-40s %8s %8s %8s %10s\n" command "wall s" "us/ev" "MiB" "MiB(all)"
	row "babeltrace2 DIR -o dummy" babeltrace2 "$TMP/trace" -o dummy
	for j in $JOBS; do
		r=$(row "analyze -j $j DIR --json" "$B/bin/ncclguard" analyze -j "$j" "$TMP/trace" \
			--json "$TMP/r.$j.json")
		all=$(tree_rss "$B/bin/ncclguard" analyze -j "$j" "$TMP/trace" --json "$TMP/r.json")
		printf "%s %10s\n" "$r" "$all"
		cmp -s "$TMP/r.$j.json" "$TMP/r.json" || { echo "-j $j: report differs between runs" >&2; exit 1; }
		[ "$j" = "${JOBS%% *}" ] || cmp -s "$TMP/r.${JOBS%% *}.json" "$TMP/r.$j.json" ||
			{ echo "-j $j: report differs from -j ${JOBS%% *}" >&2; exit 1; }
	done
	exit 0
fi

echo "$STREAMS stream files ($RANKS ranks, $HOSTS hosts), $events events, $size of CTF; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-40s %8s %8s %8s\n" command "wall s" "us/ev" "MiB"
row "babeltrace2 DIR -o dummy" babeltrace2 "$TMP/trace" -o dummy
row "analyze DIR (bounded Chrome)" "$B/bin/ncclguard" analyze "$TMP/trace"
ls -l "$TMP/trace/trace.json" | awk '{ printf "  trace.json: %.1f MiB\n", $5 / 1048576 }'
row "analyze DIR --chrome-all" "$B/bin/ncclguard" analyze "$TMP/trace" --chrome-all
ls -l "$TMP/trace/trace.json" | awk '{ printf "  trace.json: %.1f MiB\n", $5 / 1048576 }'
row "analyze DIR --json (no Chrome)" "$B/bin/ncclguard" analyze "$TMP/trace" --json "$TMP/r.json"
row "MUXER=1 analyze DIR --json" env NCCLGUARD_ANALYZE_MUXER=1 "$B/bin/ncclguard" analyze \
	"$TMP/trace" --json "$TMP/r.json"
if [ -n "${BASE:-}" ]; then
	row "before: analyze DIR" "$BASE" analyze "$TMP/trace"
	ls -l "$TMP/trace/trace.json" | awk '{ printf "  trace.json: %.1f MiB\n", $5 / 1048576 }'
	row "before: analyze DIR --json" "$BASE" analyze "$TMP/trace" --json "$TMP/r.json"
fi
