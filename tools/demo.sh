#!/bin/sh
# `make demo`: the product's main job on the CPU backend.  A 4-rank job in
# which rank 1 is slow (an injected 20 ms host delay before each
# all-reduce) is recorded with `ncclguard run`, then analyzed.
set -eu
B=$(cd "${1:-build}" && pwd)
OUT=$B/demo/trace
rm -rf "$B/demo"
mkdir -p "$B/demo"
export LD_LIBRARY_PATH="$B/sim" NCCLSIM_GBPS=10 NCCLSIM_LATENCY_US=20
echo "== ncclguard run: 4 ranks on the CPU backend, rank 1 slowed by 20 ms per all-reduce"
"$B/bin/ncclguard" run -o "$OUT" --inject "delay:ms=20,rank=1,op=allreduce,every=1" -- \
	"$B/bin/allreduce_example" --launch 4 --min-bytes 4K --max-bytes 1M --iters 5 --warmup 1 --check \
	2>"$B/demo/job.stderr" | grep -v '^ncclguard analyze' || true
echo
echo "(the job's own stderr, with the shim's messages, is in $B/demo/job.stderr)"
echo "Open $OUT/report.html in a browser, or load $OUT/trace.json in https://ui.perfetto.dev"
