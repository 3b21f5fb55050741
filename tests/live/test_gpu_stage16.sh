#!/bin/sh
# Stage 16 of tests/gpu/run.sh (tests/gpu/live16.sh) on the CPU backend,
# so that its steps are known to work before a GPU runs them: a relay on
# 127.0.0.1 (in a network namespace of the test's own), the example in
# place of the DDP job, 2 ranks where the GPU has one.  Its table says:
# watch saw the healthy job's collectives and both ranks while it ran;
# the job exits 0; analyze of the relay's folder matches every call, 0
# lost, no hang; a stalled rank 1 and an init rank 1 never joins are
# each watch's hang line (exit 5); nothing is left running.
NG_NETNS_HOST=s16host
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
[ "$(hostname)" = s16host ] || { echo "SKIP: needs a network namespace of its own (root)"; exit 0; }
for c in bash lttng-relayd lttng-sessiond python3; do
	command -v "$c" >/dev/null || { echo "SKIP: $c not installed"; exit 0; }
done
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] || fail "$EXAMPLE not built"

OUT="$NG_TMP/out"
mkdir -p "$OUT"
# 2 ranks, 5 sizes of 20 calls, 20 ms each: about 2 s, watched live.
ARGS="--launch 2 --min-bytes 8 --max-bytes 128 --iters 20 --warmup 0"
bash -c '
	set -u
	NG=$1 OUT=$2
	row() { printf "%-46s %s\n" "$1" "$2" | tee -a "$OUT/table.txt"; }
	st() { timeout -k 10 120 "$@"; }
	lt() { "$@"; }
	. "$3/tests/gpu/live16.sh"
	export LD_LIBRARY_PATH=$4 NCCLSIM_LATENCY_US=20000
	S16_STUCK=2 S16_TIMEOUT=6 s16_stage "$5 $6" "stall:rank=1,op=allreduce,seq=30" \
		"env RANK=0 WORLD_SIZE=2 NCCLGUARD_INIT_TIMEOUT=6 $5 --id-file $OUT/init.id --iters 1"
' s16 "$NG_BIN" "$OUT" "$NG_ROOT" "$NG_SIM" "$EXAMPLE" "$ARGS" || fail "the stage's harness: status $?"
T="$OUT/table.txt"
field() { sed -n "s/^$1  *//p" "$T"; }
assert_eq "$(field '16 relay on 127.0.0.1:7442: listening')" yes "relay"
assert_eq "$(field '16 ok: run exit (0) \/ watch exit (0)')" "0 / 0" "healthy job"
# Seen while it ran: how far depends on the machine's load, not the seq.
field '16 ok: watch while it ran' | grep -q '^live reports [1-9][0-9]*, max seq [1-9][0-9]*, ranks \[0, 1\]; timeouts 0; hangs 0; end sessions_ended$' ||
	{ cat "$T"; fail "watch on the healthy job"; }
assert_grep '^16 ok: analyze RDIR DIR: exit  *0$' "$T"
assert_grep '^16 ok: calls / matched line / lost / hangs / incomplete  *100 / 2 ranks on 1 host, 100 collectives matched, [0-9]* events, 0 lost / 0 / 0 / \[\]$' "$T"
assert_grep '^16 stall .*: run exit (not 0) / watch exit  *4 / 5 ' "$T"
assert_grep '^16 stall: watch while it ran .*hangs 1 (allreduce seq 30 waited [0-9.]* s: waiting \[0\] missing \[.1 s16host not_entered.\] unseen 0)' "$T"
assert_grep '^16 init never joined: run exit (4) / watch exit (5)  *4 / 5$' "$T"
assert_grep '^16 init: watch while it ran .*hangs 1 (init seq 0 waited [0-9.]* s: waiting \[0\] missing \[\] unseen 1)' "$T"
assert_grep '^16 left running (none) / sessions left  *none / 0$' "$T"
echo PASS
