#!/bin/sh
# findings[]: one list, worst first, each with a next step.  Hangs that only
# the watchdogs' timeouts show are found (a dropped call puts the dropping
# rank out of step, so its own call of the hung seq completes), with each
# rank's state: a dropping rank never entered it, a stalled one is stuck in
# its host call, the others wait; a skipped call under on_timeout=abort is
# a hang too.  A policy violation is a finding, and
# --fail-on hang exits 5.  Jobs run on the CPU backend under `ncclguard run`,
# ended by on_timeout=exit.
. "$NG_ROOT/tests/lib.sh"
EX="$NG_BUILD/bin/allreduce_example"
export LD_LIBRARY_PATH="$NG_SIM"
cd "$NG_TMP" || exit 1

# js FILE EXPR: a Python expression on report.json `r`
js() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
# job DIR ARGS...: ncclguard run -o DIR ARGS -- a small 4-rank all-reduce
# job (with $JOBARGS)
JOBARGS=""
job() {
	d=$1; shift
	# shellcheck disable=SC2086
	"$NG_BIN" run -o "$d" "$@" -- "$EX" --launch 4 --max-bytes 64K --iters 4 \
		--warmup 1 $JOBARGS > "$d.out" 2>&1
}
# The same list in the summary and in report.json, worst first.
check_list() {
	python3 - "$1/report.json" "$1/summary.txt" <<'PY' || fail "$1: findings[] wrong"
import json, sys
r = json.load(open(sys.argv[1])); s = open(sys.argv[2]).read()
f = r["findings"]
sev = {"error": 2, "warning": 1, "info": 0}
assert f, "no findings"
assert [sev[x["severity"]] for x in f] == sorted((sev[x["severity"]] for x in f), reverse=True), f
for x in f:
    assert set(x) >= {"kind", "severity", "summary", "ranks", "hosts", "next_step"}, x
    assert x["summary"] in s, ("not in the summary", x["summary"])
    assert x["next_step"], x
PY
}

note "drop: rank 1 drops seq 7, the others hang (only the timeouts show it)"
job D --timeout 3 --on-timeout exit --inject "drop:rank=1,op=allreduce,seq=7"
"$NG_BIN" analyze D --json D/report.json > D/summary.txt 2> D/err ||
	fail "analyze exited $?: $(cat D/err)"
check_list D
assert_eq "$(js D/report.json "len(r['timeouts']) > 0")" True "timeouts recorded"
assert_eq "$(js D/report.json "len(r['hangs'])")" 1 "hangs"
assert_eq "$(js D/report.json "sorted(r['hangs'][0]['rank_state'].items())")" \
	"[('0', 'waiting'), ('1', 'never_entered'), ('2', 'waiting'), ('3', 'waiting')]" \
	"rank states of the drop"
assert_eq "$(js D/report.json "r['hangs'][0]['missing_ranks']")" "[1]" "missing ranks"
assert_eq "$(js D/report.json "r['findings'][0]['kind']")" hang "first finding"
grep "hang:" D/summary.txt | grep -q "ranks 0,2,3 waiting.*rank 1 never entered it" ||
	fail "hang sentence: $(grep hang: D/summary.txt)"
"$NG_BIN" analyze D --fail-on hang > /dev/null 2>&1
assert_eq "$?" 5 "--fail-on hang on the drop"
"$NG_BIN" analyze D --fail-on policy > /dev/null 2>&1
assert_eq "$?" 0 "--fail-on policy on the drop"

note "stall: rank 2 blocks inside its seq 3 call"
job S --timeout 3 --on-timeout exit --inject "stall:rank=2,op=allreduce,seq=3"
"$NG_BIN" analyze S --json S/report.json > S/summary.txt 2> S/err ||
	fail "analyze exited $?: $(cat S/err)"
check_list S
assert_eq "$(js S/report.json "[(h['seq'], h['rank_state']['2']) for h in r['hangs']]")" \
	"[(3, 'in_host_call')]" "the stalled rank's state"
assert_no_grep "rank 2 never entered" S/summary.txt
grep "hang:" S/summary.txt | grep -q "rank 2 stuck inside the host call" ||
	fail "stall sentence: $(grep hang: S/summary.txt)"

note "skip: rank 3 skips seq 5, on_timeout=abort flushes the stuck calls out"
JOBARGS="--skip-seq 5 --skip-rank 3"
job K --timeout 3 --on-timeout abort
JOBARGS=""
"$NG_BIN" analyze K --json K/report.json > K/summary.txt 2> K/err ||
	fail "analyze exited $?: $(cat K/err)"
check_list K
assert_eq "$(js K/report.json "len(r['hangs']) == 1 and r['hangs'][0]['waiting_ranks']")" \
	"[0, 1, 2]" "waiting ranks of the skip"
assert_eq "$(js K/report.json "r['hangs'][0]['rank_state']['3'] != 'waiting'")" True \
	"rank 3's state"
assert_eq "$(js K/report.json "r['findings'][0]['kind']")" hang "first finding of the skip"

note "policy violation, on_violation warn: a finding"
printf '[env]\nNCCL_SOCKET_IFNAME = enforce =ngnone9\n[violation]\naction = warn\n' > pol.conf
chmod 644 pol.conf
job P --policy "$PWD/pol.conf" || fail "policy job exited $?: $(tail -5 P.out)"
"$NG_BIN" analyze P --json P/report.json > P/summary.txt 2> P/err ||
	fail "analyze exited $?: $(cat P/err)"
check_list P
assert_eq "$(js P/report.json "[x['kind'] for x in r['findings']][0]")" policy "first finding"
# A rank whose process registered with the session late may lack its
# policy events: every rank named is one of the job's.
assert_eq "$(js P/report.json "0 < len(r['findings'][0]['ranks']) and set(r['findings'][0]['ranks']) <= {0, 1, 2, 3}")" \
	True "policy ranks: $(js P/report.json "r['findings'][0]['ranks']")"
assert_grep "policy: NCCL_SOCKET_IFNAME violates the policy" P/summary.txt
assert_no_grep "no hangs, mismatches" P/summary.txt
"$NG_BIN" analyze P --fail-on policy > /dev/null 2>&1
assert_eq "$?" 5 "--fail-on policy"
echo "findings: ok"
