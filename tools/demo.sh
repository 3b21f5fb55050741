#!/bin/sh
# `make demo`: the product's main job on the CPU backend.  Two 4-rank
# jobs recorded with `ncclguard run`, each analyzed at its end:
#   1. rank 1 is slow (an injected 20 ms host delay before each
#      all-reduce): a straggler, found at its size;
#   2. rank 1 drops its all-reduce seq 7: the others wait for it, their
#      watchdogs fire after 3 s, and the hang is named with each rank's
#      state.  `analyze --fail-on hang` then exits 5, as a CI job would.
set -eu
B=$(cd "${1:-build}" && pwd)
rm -rf "$B/demo"
mkdir -p "$B/demo"
export LD_LIBRARY_PATH="$B/sim" NCCLSIM_GBPS=10 NCCLSIM_LATENCY_US=20
EX="$B/bin/allreduce_example"

echo "== 1. a straggler: 4 ranks on the CPU backend, rank 1 slowed by 20 ms per all-reduce"
"$B/bin/ncclguard" run -o "$B/demo/slow" --inject "delay:ms=20,rank=1,op=allreduce,every=1" -- \
	"$EX" --launch 4 --min-bytes 4K --max-bytes 1M --iters 5 --warmup 1 --check \
	2>"$B/demo/slow.stderr" | grep -v '^ncclguard analyze' || true
echo
echo "== 2. a hang: rank 1 drops all-reduce seq 7; the watchdogs fire after 3 s"
"$B/bin/ncclguard" run -o "$B/demo/hang" --timeout 3 --on-timeout exit \
	--inject "drop:rank=1,op=allreduce,seq=7" -- \
	"$EX" --launch 4 --min-bytes 1K --max-bytes 1K --iters 20 --warmup 0 \
	2>"$B/demo/hang.stderr" | grep -v '^ncclguard analyze' || true
echo
set +e
"$B/bin/ncclguard" analyze "$B/demo/hang" --fail-on hang >/dev/null 2>&1
rc=$?
set -e
echo "ncclguard analyze $B/demo/hang --fail-on hang: exit status $rc (5: a hang was found)"
echo
echo "(the jobs' own stderr, with the shim's messages: $B/demo/slow.stderr, $B/demo/hang.stderr)"
echo "Open $B/demo/slow/report.html and $B/demo/hang/report.html in a browser,"
echo "or load their trace.json in https://ui.perfetto.dev"

# A demo that did not show what it says fails (make demo is a check too).
bad=""
grep -q '"kind": "straggler"' "$B/demo/slow/report.json" 2>/dev/null ||
	bad="$bad no straggler in $B/demo/slow/report.json;"
[ "$rc" = 5 ] || bad="$bad no hang found in $B/demo/hang;"
for f in "$B/demo/slow/report.html" "$B/demo/hang/report.html"; do
	[ -s "$f" ] || bad="$bad no $f;"
done
if [ -n "$bad" ]; then
	echo "demo: FAILED:${bad%;} (see the stderr files above)" >&2
	exit 1
fi
