#!/bin/sh
# Regenerates the committed analyzer test traces and their expected
# reports.  Run from anywhere after `make`; review the diff before
# committing.  The traces are synthetic (tests/analyze/gen.c writes LTTng's
# CTF layout); recorded CPU-backend traces join them once the tracer lands.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GEN="$ROOT/build/tests/ng_trace_gen"
BIN="$ROOT/build/bin/ncclguard"
T="$ROOT/tests/analyze/traces"

make_case() {
	name=$1; shift
	rm -rf "$T/$name"
	mkdir -p "$T/$name"
	"$GEN" -o "$T/$name/trace" "$@"
}

make_case slow_rank --ranks 4 --iters 24 --slow-rank 1 --slow-ms 20.3
make_case skip_call --ranks 4 --iters 12 --skip-last 2
make_case count_mismatch --ranks 4 --iters 12 --mismatch 2:5:999
make_case two_hosts --ranks 4 --iters 40 --hosts 2 --clock-error-ms 250 --slow-rank 3 --slow-ms 2
make_case mixed_versions --ranks 4 --iters 8 --nccl-version 3:21903
make_case drop --ranks 4 --iters 12 --drop 3:6
make_case lost_events --ranks 2 --iters 12 --lost 17
make_case sizes --ranks 8 --iters 48 --ops allreduce,allgather,broadcast \
	--sizes 1024,65536,1048576,16777216 --sample 2

# Exactly what test_golden.sh runs, with its output paths shown as TMP.
for d in "$T"/*/; do
	d=${d%/}
	out=$(mktemp -d)
	"$BIN" analyze "$d/trace" --json "$out/report.json" --chrome "$out/chrome.json" \
		--html "$out/report.html" | sed "s|$out|TMP|g" > "$d/expect.txt"
	cp "$out/report.json" "$d/expect.json"
	rm -rf "$out"
done
