#!/bin/sh
# Regenerates the committed analyzer test traces and their expected
# reports.  Run from anywhere after `make`; review the diff before
# committing.  Two kinds of trace:
#   synthetic (tests/analyze/gen.c writes LTTng's CTF layout): exact
#     scenarios, regenerated every time;
#   real_*: jobs recorded by `ncclguard run` on the CPU backend with the
#     shim, as a user records them.  Their timing differs at every
#     recording, so they are re-recorded only with RECORD=1 (needs LTTng);
#     otherwise only their expectations are rewritten.
# The test (test_golden.sh) never records: it analyses the committed traces.
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
# The same with GPU timing sampled (1 call in 5): the last completions are
# seq 11, the watchdogs' timeouts name seq 14, the call rank 3 dropped.
make_case sampled_drop --ranks 4 --iters 24 --drop 3:14 --sample 5
# A job hung in init: rank 2 never began it (stuck before
# init_process_group), the others time out in init; rank 2 traced or not.
make_case init_missing --ranks 4 --init-missing 2
make_case init_untraced --ranks 4 --init-missing 2:untraced
# Two hosts, one named in bytes that are not UTF-8: the report must
# still be valid UTF-8 JSON and HTML.
make_case odd_host --ranks 2 --iters 6 --hosts 2 --odd-host
# A slow call that timed out under on_timeout=warn and then completed, and
# a trace stopped while the last call ran: in flight, not a hang.
make_case resolved_timeout --ranks 4 --iters 12 --warn-timeout 4 --cut-last
# Scripted traces (tests/analyze/scripts/NAME.txt, two ranks): the
# send/recv cases and the watchdog's confirmations across call kinds.
for s in "$ROOT"/tests/analyze/scripts/*.txt; do
	name=$(basename "$s" .txt)
	rm -rf "$T/$name"
	mkdir -p "$T/$name"
	"$GEN" -o "$T/$name/trace" --ranks 2 --script "$s"
done
make_case lost_events --ranks 2 --iters 12 --lost 17
make_case sizes --ranks 8 --iters 48 --ops allreduce,allgather,broadcast \
	--sizes 1024,65536,1048576,16777216 --sample 2
# PyTorch DDP on one rank: the init's coalesced broadcasts in a group whose
# completions come after the next call's, then 30 steps of two all-reduces,
# the last completions flushed after the destroy.  No hang, no straggler,
# every call timed.
make_case one_rank_late --ranks 1 --iters 60 --group-late 2 \
	--head broadcast:4,broadcast:32,allgather:8,broadcast:64,broadcast:128 \
	--ops allreduce --sizes 16777216,4 --flush-after-destroy 10

# record NAME RANKS [ENV=VALUE...] -- [ncclguard run options] -- CMD...
# A session records every process of this user on the host: a recording
# that caught another job's events (more processes than RANKS) is retried.
record() {
	name=$1 ranks=$2; shift 2
	envs=""
	while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	for try in 1 2 3 4 5; do
		tmp=$(mktemp -d)
		# shellcheck disable=SC2086
		env LD_LIBRARY_PATH="$ROOT/build/sim" NCCLSIM_GBPS=10 NCCLSIM_LATENCY_US=20 $envs \
			"$BIN" run -o "$tmp/t" "$@" > "$tmp/log" 2>&1 || true
		procs=$(babeltrace2 "$tmp/t" 2>/dev/null | grep -o 'vpid = [0-9]*' | sort -u | wc -l)
		if [ "$procs" = "$ranks" ]; then
			rm -rf "$T/$name"
			mkdir -p "$T/$name/trace"
			for h in "$tmp/t"/*/; do
				cp -r "$h" "$T/$name/trace/"
			done
			rm -rf "$tmp"
			return 0
		fi
		echo "make_traces: $name: $procs processes in the trace, not $ranks; again" >&2
		rm -rf "$tmp"
	done
	echo "make_traces: $name: could not record it alone" >&2
	exit 1
}

if [ "${RECORD:-0}" = 1 ]; then
	EX="$ROOT/build/bin/allreduce_example"
	SMALL="--min-bytes 1K --max-bytes 4K --iters 2 --warmup 0"
	# 4 ranks, rank 1 enters every all-reduce 20 ms late: a straggler.
	record real_slow_rank 4 -- --inject "delay:ms=20,rank=1,op=allreduce" -- \
		"$EX" --launch 4 $SMALL --iters 3
	# Rank 2 skips its 3rd call: its peers time out after 1 s and exit 4.
	record real_skip 4 NCCLGUARD_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=exit -- -- \
		"$EX" --launch 4 $SMALL --skip-seq 3 --skip-rank 2
	# Each all-reduce in a group with a ring send/recv: members share one
	# GPU slice, and the completions come after the destroy (exit flush).
	record real_group 2 -- -- "$EX" --launch 2 $SMALL --group
	# Every operation at two sizes.
	record real_mixed 4 -- -- "$EX" --launch 4 --mixed --min-bytes 1K --max-bytes 2K \
		--iters 1 --warmup 0
	# One rank (no stragglers, no hangs): grouped calls of every operation,
	# then many all-reduces, completions flushed after the destroy.
	record real_one_rank 1 -- -- "$EX" --launch 1 --mixed --group --min-bytes 4 \
		--max-bytes 32 --step-factor 8 --iters 3 --warmup 0
	# NCCL 2.30 with copy-engine collectives: every operation at two
	# sizes, the all-gathers and all-to-alls on the copy engine (profiler
	# v6's CeColl: algorithm CE), the wrapper timing them all.
	record real_ce 2 NCCLSIM_VERSION=23007 NCCLSIM_CE_COLL=1 -- -- "$EX" --launch 2 --mixed \
		--min-bytes 1K --max-bytes 2K --iters 1 --warmup 0
fi

# Exactly what test_golden.sh runs, with its output paths shown as TMP.
for d in "$T"/*/; do
	d=${d%/}
	out=$(mktemp -d)
	"$BIN" analyze "$d/trace" --json "$out/report.json" --chrome "$out/chrome.json" \
		--html "$out/report.html" | sed "s|$out|TMP|g" > "$d/expect.txt"
	cp "$out/report.json" "$d/expect.json"
	rm -rf "$out"
done
