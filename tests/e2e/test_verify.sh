#!/bin/sh
# Output verification on the CPU backend: 4 ranks, rounds of an
# all-reduce, an all-gather and a broadcast (tests/e2e/verify_job.c; seq
# 3k+1, 3k+2, 3k+3), recorded by `ncclguard run`:
#   A  healthy, --verify all: every call fingerprinted by every rank, all
#      the same; nothing found
#   B  a byte of rank 2's output changed in an all-reduce (seq 4), an
#      all-gather (5) and a broadcast (9): those calls differ, on rank 2,
#      and the report names rank 2
#   C  the same corruption where the sample (--verify 4: seqs 3, 7, 11)
#      does not reach: it happens, and nothing is seen
#   D  the calls in groups, E on a nonblocking comm whose calls return
#      ncclInProgress and launch later: rank 2 named as in B
#   F  round 2 captured into a graph: no copy of its calls (seqs 4-6)
#   G  the default period: a short job has nothing compared, and says so
#   H  a period that is not a power of two: run refuses it; the shim warns
#      and keeps its default
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/e2e/verify_job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
command -v python3 >/dev/null || fail "python3 not installed"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_HEALTH_INTERVAL=0
unset NCCLGUARD_VERIFY NCCLGUARD_INJECT

cat >"$NG_TMP/ranks.sh" <<'SH'
J=$1 ID=$2; shift 2
for r in 0 1 2 3; do RANK=$r WORLD_SIZE=4 "$J" "$ID" "$@" & done
s=0; for r in 0 1 2 3; do wait %$((r + 1)) || s=1; done
exit $s
SH

# job NAME [RUN OPTIONS] -- [JOB OPTIONS]: 4 ranks, 4 rounds, under run.
job() {
	_n=$1; shift
	_ro=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do _ro="$_ro $1"; shift; done
	[ $# -gt 0 ] && shift
	# shellcheck disable=SC2086
	timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/$_n" $_ro -- sh "$NG_TMP/ranks.sh" "$JOB" \
		"$NG_TMP/$_n.id" 4 "$@" >"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" ||
		{ cat "$NG_TMP/$_n.err"; fail "job $_n failed"; }
	ng_trace_text "$NG_TMP/$_n" "$NG_TMP/$_n.txt"
	python3 "$NG_ROOT/tests/gpu/fpcheck.py" <"$NG_TMP/$_n.txt" >"$NG_TMP/$_n.fp"
	"$NG_BIN" analyze "$NG_TMP/$_n" --json "$NG_TMP/$_n.json" >"$NG_TMP/$_n.sum" 2>&1 ||
		{ cat "$NG_TMP/$_n.sum"; fail "analyze $_n failed"; }
}
# fp NAME: the fingerprint line (fingerprints N compared N mismatched N ...)
fp() { head -1 "$NG_TMP/$1.fp"; }
# seqs NAME: the seqs fingerprinted, one line
seqs() {
	sed -n 's/.*ncclguard:fingerprint:.* seq = \([0-9]*\),.*/\1/p' "$NG_TMP/$1.txt" | sort -n -u | tr '\n' ' '
}
# report NAME PYTHON: PYTHON's asserts on report.json as r
report() {
	python3 - "$NG_TMP/$1.json" "$2" <<'PY' || { cat "$NG_TMP/$1.sum"; fail "$1: report"; }
import json, sys
r = json.load(open(sys.argv[1]))
dm = [f for f in r['findings'] if f['kind'] == 'data_mismatch']
exec(sys.argv[2])
PY
}

note "A: healthy, every call verified"
job A --verify all --
assert_eq "$(fp A)" "fingerprints 48 compared 12 mismatched 0 captured_with_fp 0 captured_calls 0" "A"
report A "assert dm == [], dm
v = r['verification']
assert len(v) == 1 and v[0]['compared'] == 12 and v[0]['mismatched'] == 0, v"

note "B: rank 2's outputs corrupted in each op"
job B --verify all --inject 'corrupt:rank=2,seq=4;corrupt:rank=2,seq=5;corrupt:rank=2,seq=9' --
assert_grep "injecting corrupt into allgather seq 5" "$NG_TMP/B.err"
assert_eq "$(fp B)" "fingerprints 48 compared 12 mismatched 3 captured_with_fp 0 captured_calls 0" "B"
for d in "allreduce seq 4" "allgather seq 5" "broadcast seq 9"; do
	assert_grep "differs: $d: rank 2$" "$NG_TMP/B.fp"
done
report B "assert len(dm) == 1, dm
assert dm[0]['ranks'] == [2], dm[0]
s = dm[0]['summary']
assert 'all-reduce' in s and 'seq 4' in s and '3 of 12' in s, s
assert r['verification'][0]['mismatched'] == 3, r['verification']"
"$NG_BIN" analyze "$NG_TMP/B" --fail-on data >/dev/null 2>&1 && fail "B: --fail-on data passed"

note "C: the corruption where the sample does not reach"
job C --verify 4 --inject 'corrupt:rank=2,seq=5' --
assert_grep "injecting corrupt into allgather seq 5" "$NG_TMP/C.err"
assert_eq "$(seqs C)" "3 7 11 " "C: the sampled seqs"
assert_eq "$(fp C)" "fingerprints 12 compared 3 mismatched 0 captured_with_fp 0 captured_calls 0" "C"
report C "assert dm == [], dm
assert r['verification'][0]['compared'] == 3, r['verification']"

note "D: in groups"
job D --verify all --inject 'corrupt:rank=2,seq=5' -- --group
assert_grep "differs: allgather seq 5: rank 2$" "$NG_TMP/D.fp"
assert_eq "$(fp D)" "fingerprints 48 compared 12 mismatched 1 captured_with_fp 0 captured_calls 0" "D"
report D "assert len(dm) == 1 and dm[0]['ranks'] == [2], dm"

note "E: a nonblocking comm whose calls launch after ncclInProgress"
NCCLSIM_NONBLOCKING_CALL_HOLD=1 job E --verify all --inject 'corrupt:rank=2,seq=5' -- --nonblocking
[ "$(grep -c 'ncclguard:coll_enqueue:.*result = 7,' "$NG_TMP/E.txt")" = 48 ] ||
	fail "E: every call should have returned ncclInProgress"
assert_grep "differs: allgather seq 5: rank 2$" "$NG_TMP/E.fp"
assert_eq "$(fp E)" "fingerprints 48 compared 12 mismatched 1 captured_with_fp 0 captured_calls 0" "E"
report E "assert len(dm) == 1 and dm[0]['ranks'] == [2], dm"

note "F: round 2 captured into a graph"
job F --verify all -- --capture 2
assert_eq "$(seqs F)" "1 2 3 7 8 9 10 11 12 " "F: no captured call fingerprinted"
assert_eq "$(fp F)" "fingerprints 36 compared 9 mismatched 0 captured_with_fp 0 captured_calls 3" "F"

note "G: the default period, a short job"
job G --
assert_eq "$(fp G)" "fingerprints 0 compared 0 mismatched 0 captured_with_fp 0 captured_calls 0" "G"
assert_grep "verify_every = 1024" "$NG_TMP/G.txt"
report G "assert r['verification'] == [] or all(v['compared'] == 0 for v in r['verification']), r['verification']"
assert_grep "no call compared" "$NG_TMP/G.sum"

note "H: a period that is not a power of two"
rc=0
"$NG_BIN" run -o "$NG_TMP/H" --verify 1000 -- true 2>"$NG_TMP/H.err" || rc=$?
assert_eq "$rc" 2 "H: run --verify 1000"
assert_grep "power of two" "$NG_TMP/H.err"
[ ! -e "$NG_TMP/H" ] || fail "H: a refused run left $NG_TMP/H"
NCCLGUARD_VERIFY=1000 job H2 --
assert_grep "NCCLGUARD_VERIFY='1000'.*power of two.*keeping 1024" "$NG_TMP/H2.err"
echo "PASS"
