#!/bin/sh
# A pipeline's send that never happens, recorded: rank 1 of 2 drops its
# third send to rank 0 (sendrecv in a ring, six iterations).  NCCL pairs
# sends and recvs in order per peer, so rank 0's last recv from rank 1 is
# the one left without a match: its watchdog exits 4, and the analyzer
# names rank 1 as the peer that posted 5 of the 6 sends.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=10 NCCLSIM_LATENCY_US=20 NCCLGUARD_DUMP_DIR="$NG_TMP"
rc=0
timeout -k 5 60 "$NG_BIN" run -o "$NG_TMP/trace" --timeout 1 --on-timeout exit \
	--inject "drop:rank=1,op=send,seq=5" -- "$EXAMPLE" --launch 2 --op sendrecv \
	--min-bytes 1K --max-bytes 1K --iters 6 --warmup 0 >"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
[ "$rc" = 4 ] || { cat "$NG_TMP/out" "$NG_TMP/err"; fail "exit status $rc, expected 4 (rank 0's watchdog)"; }
assert_grep "injecting drop into send seq 5" "$NG_TMP/err"
"$NG_BIN" analyze "$NG_TMP/trace" --json "$NG_TMP/report.json" >"$NG_TMP/summary" 2>&1 ||
	{ cat "$NG_TMP/summary"; fail "analyze exited $?"; }
assert_grep "hang: recv p2p seq 12 on comm [0-9a-f]* never completed: rank 0 waiting for rank 1, which posted only 5 of the 6 sends to it; timed out" \
	"$NG_TMP/summary"
python3 - "$NG_TMP/report.json" <<'PY' || fail "report.json: the p2p hang"
import json, sys
r = json.load(open(sys.argv[1]))
h = r["hangs"]
assert len(h) == 1, h
h = h[0]
assert h["op"] == "recv" and h["p2p"] and h["seq"] == 12, h
assert h["waiting_ranks"] == [0] and h["missing_ranks"] == [1], h
assert h["ordinal"] == 6 and h["peer_posted"] == 5, h
PY
echo "p2p hang: rank 1 named"
