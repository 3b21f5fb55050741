#!/bin/sh
# NCCL 2.29's and 2.30's calls under `ncclguard run` on the CPU backend
# (tests/e2e/api_job.c; NCCLSIM_VERSION plays the NCCL):
#   grow      2 ranks grow to 4: every member's comm_init_end carries the
#             same hash (NCCL's, from the profiler plugin), ident nccl;
#             the analyzer sees one comm of 4 with its all-reduce matched;
#             without the plugin the two halves cannot be matched: the
#             grow_unjoined entry, and no hang
#   shrink    4 -> 3, its all-reduce matched
#   suspend   a collective between suspend and resume is refused with
#             ncclInvalidUsage, warned of once, recorded; no hang
#   signals   put/signal + waitsignal rounds complete and are recorded; a
#             wait with no signal is named by the watchdog with its peer;
#             an injected error on op=waitsignal reaches the program
#   params    the parameter API and memory stats: what the backend says
#             reaches the program unchanged
#   growold   NCCL 2.28: ncclCommGrow fails with ncclInvalidUsage, the
#             shim stays quiet, the init is recorded as failed
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/e2e/api_job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
command -v python3 >/dev/null || fail "python3 not installed"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_HEALTH_INTERVAL=0
export NCCLSIM_VERSION=23007
unset NCCLGUARD_VERIFY NCCLGUARD_INJECT

cat >"$NG_TMP/ranks.sh" <<'SH'
J=$1 ID=$2 N=$3; shift 3
i=0 pids=
while [ $i -lt "$N" ]; do RANK=$i WORLD_SIZE=$N "$J" "$ID" "$@" & pids="$pids $!"; i=$((i + 1)); done
s=0; for p in $pids; do wait "$p" || s=1; done
exit $s
SH

# job NAME NRANKS MODE [RUN OPTIONS]: the job under run; its exit status
# in NAME.rc, its trace's text in NAME.txt, the analysis in NAME.json.
job() {
	_n=$1 _k=$2 _m=$3; shift 3
	_rc=0
	timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/$_n" "$@" -- sh "$NG_TMP/ranks.sh" "$JOB" \
		"$NG_TMP/$_n.id" "$_k" "$_m" >"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" || _rc=$?
	echo "$_rc" >"$NG_TMP/$_n.rc"
	ng_trace_text "$NG_TMP/$_n" "$NG_TMP/$_n.txt"
	"$NG_BIN" analyze "$NG_TMP/$_n" --json "$NG_TMP/$_n.json" >"$NG_TMP/$_n.sum" 2>&1 ||
		{ cat "$NG_TMP/$_n.sum"; fail "analyze $_n failed"; }
}
ok() { [ "$(cat "$NG_TMP/$1.rc")" = 0 ] || { cat "$NG_TMP/$1.out" "$NG_TMP/$1.err"; fail "job $1 exited $(cat "$NG_TMP/$1.rc")"; }; }

note "grow, with the profiler plugin"
job grow 4 grow
ok grow
assert_eq "$(grep -c 'grown allreduce returned 0' "$NG_TMP/grow.out")" 4 "grown all-reduces"
python3 - "$NG_TMP/grow.txt" "$NG_TMP/grow.json" <<'PY' || fail "grow: one comm of 4"
import json, re, sys
ends = [l for l in open(sys.argv[1]) if "comm_init_end" in l and 'kind = "grow"' in l]
assert len(ends) == 4, ends
hashes = {re.search(r"comm_hash = (0x[0-9A-Fa-f]+)", l).group(1) for l in ends}
assert len(hashes) == 1, hashes
assert all('ident = "nccl"' in l for l in ends), ends
assert sum('parent_hash = 0x0,' in l for l in ends) == 2, ends
h = int(hashes.pop(), 16)
r = json.load(open(sys.argv[2]))
comms = {int(c["comm_hash"], 16) if isinstance(c["comm_hash"], str) else c["comm_hash"]: c
         for c in r["comms"]}
assert h in comms, (hex(h), list(comms))
c = comms[h]
assert c["nranks"] == 4, c
assert not r["hangs"], r["hangs"]
assert not [i for i in r.get("incomplete", []) if i.get("kind") == "grow_unjoined"], r["incomplete"]
PY

echo "api: all ok"
