#!/bin/sh
# Under `ncclguard run -o D` the hang reports of a stalled job go to
# D/<host>/hang/, none to the working directory, and `ncclguard analyze D`
# reads them: the stalled rank inside its host call, the others waiting
# on the GPU.  A folder the user names (NCCLGUARD_DUMP_DIR) wins; a
# healthy run leaves no hang/ folder.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
unset NCCLGUARD_DUMP_DIR
mkdir "$NG_TMP/cwd" && cd "$NG_TMP/cwd" || fail "no working directory"
job() {
	d=$1; shift
	timeout -k 5 60 "$NG_BIN" run -o "$d" --timeout 2 --on-timeout exit "$@" -- "$EXAMPLE" \
		--launch 4 --min-bytes 1K --max-bytes 1K --iters 5 --warmup 0
}

note "a stalled rank"
job "$NG_TMP/D" --inject 'stall:rank=1,seq=3' >"$NG_TMP/out" 2>"$NG_TMP/err" &&
	fail "the job succeeded with a rank stalled"
assert_eq "$(ls -A "$NG_TMP/cwd")" "" "files left in the working directory"
hang=$(ls -d "$NG_TMP"/D/*/hang 2>/dev/null)
[ -d "$hang" ] || { cat "$NG_TMP/err"; fail "no D/<host>/hang folder"; }
assert_eq "$(stat -c %a "$hang")" 755 "mode of $hang"
assert_eq "$(ls "$hang" | grep -c '^ncclguard-hang-rank[0-3]-pid[0-9]*\.json$')" 4 "dumps in $hang"
assert_eq "$(ls -A "$hang" | wc -l)" 4 "files in $hang"
assert_grep "hang report written to $hang/" "$NG_TMP/err"

note "analyze reads them, each once"
NCCLGUARD_LOG=debug "$NG_BIN" analyze "$NG_TMP/D" "$NG_TMP/D" >"$NG_TMP/an" 2>"$NG_TMP/an.err" ||
	{ cat "$NG_TMP/an.err"; fail "analyze failed"; }
assert_eq "$(grep -c 'hang dump .*/hang/ncclguard-hang-rank' "$NG_TMP/an.err")" 4 "dumps read"
assert_grep "rank 1 pid [0-9]*, 0 calls waiting on the GPU, 1 in host calls" "$NG_TMP/an.err"
for r in 0 2 3; do
	assert_grep "rank $r pid [0-9]*, 3 calls waiting on the GPU, 0 in host calls" "$NG_TMP/an.err"
done
assert_no_grep "hang_dump_unreadable" "$NG_TMP/an"

note "a dump that is not one"
printf '{"schema": "ncclguard-hang/1", "pid": 7' >"$hang/ncclguard-hang-rank9-pid7.json"
"$NG_BIN" analyze "$NG_TMP/D" --json "$NG_TMP/r.json" >/dev/null 2>&1 ||
	fail "analyze failed on a cut dump"
assert_grep '"hang_dump_unreadable"' "$NG_TMP/r.json"

note "report.json: each dump once, the stalled rank inside its host call"
rm "$hang/ncclguard-hang-rank9-pid7.json"
d0=$(ls "$hang"/ncclguard-hang-rank0-*.json)
sed 's/"job": "[^"]*"/"job": "another-job"/' "$d0" >"$hang/ncclguard-hang-rank0-pid1.json"
"$NG_BIN" analyze "$NG_TMP/D" --json "$NG_TMP/r.json" >/dev/null 2>&1 || fail "analyze failed"
python3 - "$NG_TMP/r.json" <<'EOF' || fail "see above"
import json, sys
r = json.load(open(sys.argv[1]))
d = r['hang_dumps']
assert sorted(x['rank'] for x in d) == [0, 1, 2, 3], d
assert r['hang_dumps_other_job'] == 1, r['hang_dumps_other_job']
one = [x for x in d if x['rank'] == 1][0]
assert [c['where'] for c in one['calls']] == ['host_call'], one
h = [x for x in r['hangs'] if x['seq'] == 3]
assert h and h[0]['rank_state']['1'] == 'in_host_call', r['hangs']
assert not [i for i in r['incomplete'] if i['what'] == 'timeout_not_in_trace'], r['incomplete']
EOF

note "NCCLGUARD_DUMP_DIR set by the user"
mkdir "$NG_TMP/mine"
NCCLGUARD_DUMP_DIR="$NG_TMP/mine" job "$NG_TMP/E" --inject 'stall:rank=1,seq=3' \
	>/dev/null 2>"$NG_TMP/err" && fail "the job succeeded with a rank stalled"
assert_eq "$(ls "$NG_TMP/mine" | grep -c '^ncclguard-hang-rank')" 4 "dumps in the user's folder"
assert_eq "$(ls -d "$NG_TMP"/E/*/hang 2>/dev/null)" "" "a hang folder in E"

note "a healthy run"
job "$NG_TMP/F" >/dev/null 2>"$NG_TMP/err" || { cat "$NG_TMP/err"; fail "a healthy job failed"; }
assert_eq "$(ls -d "$NG_TMP"/F/*/hang 2>/dev/null)" "" "a hang folder in F"
assert_eq "$(ls -A "$NG_TMP/cwd")" "" "files left in the working directory"
echo "ok"
