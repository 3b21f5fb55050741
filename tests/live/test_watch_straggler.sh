#!/bin/sh
# `ncclguard watch` names stragglers live, by the analyzer's rule: a
# 4-rank job of the CPU backend, ranks 0-1 on hosta and 2-3 on hostb, each
# host's ranks under `ncclguard run --relay`, `watch --json` attached
# before the job starts:
#   healthy, while two busy loops compete for the cores (as
#   analyze/test_stragglers.sh): no straggler record;
#   rank 2 delayed 20 ms before each call: a straggler record naming rank
#   2 on hostb, about 20 ms late, within 10 s of the job's start (the
#   figure seen is printed).
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EX="$NG_BUILD/bin/allreduce_example"
[ -x "$EX" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

ng_relayd_start "$NG_TMP/relay"
for h in hosta hostb; do ng_host_up $h; done
RELAY="net://127.0.0.1:$NG_RELAY_CTRL:$NG_RELAY_DATA"

# job TAG [ENV...] -- ARGS...: the job, watched; its ranks start once
# watch has attached to both hosts' sessions.  Sets GO (the job's start,
# epoch s) and leaves watch's records in $NG_TMP/TAG.json, its pid in W.
job() {
	_tag=$1; shift
	_envs=""
	while [ "$1" != "--" ]; do _envs="$_envs $1"; shift; done
	shift
	"$NG_BIN" watch "$NG_RELAY_URL" --json --every 1 --job "$_tag-$$" \
		>"$NG_TMP/$_tag.json" 2>"$NG_TMP/$_tag.werr" &
	W=$!
	NG_AT_EXIT="kill $W 2>/dev/null; $NG_AT_EXIT"
	for h in hosta hostb; do
		r0=0; [ $h = hostb ] && r0=2
		# shellcheck disable=SC2086
		( ng_on $h env NCCLGUARD_JOB="$_tag-$$" NCCLGUARD_HEALTH_INTERVAL=0 NCCLGUARD_VERIFY=0 \
			LD_LIBRARY_PATH="$NG_SIM" $_envs \
			"$NG_BIN" run --relay "$RELAY" -o "$NG_TMP/$_tag.runs" -- sh -c '
				go=$1 r0=$2; shift 2
				i=0
				until [ -e "$go" ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
				RANK=$r0 WORLD_SIZE=4 LOCAL_RANK=0 "$@" &
				p0=$!
				RANK=$((r0 + 1)) WORLD_SIZE=4 LOCAL_RANK=1 "$@" &
				p1=$!
				rc=0
				wait $p0 || rc=$?
				wait $p1 || rc=$?
				exit $rc' sh "$NG_TMP/$_tag.go" $r0 "$EX" --id-file "$NG_TMP/$_tag.id" "$@" \
			>"$NG_TMP/$_tag.$h.out" 2>&1
		  echo $? >"$NG_TMP/$_tag.$h.rc" ) &
	done
	for h in hosta hostb; do
		ng_until_grep "attached to .*/host/$h/ncclguard-" "$NG_TMP/$_tag.json" $W
	done
	GO=$(date +%s.%N)
	touch "$NG_TMP/$_tag.go"
}

# job_end TAG: waits for both hosts' runs (300 s at most) and for watch
# to end with their sessions.
job_end() {
	for h in hosta hostb; do
		i=0
		until [ -f "$NG_TMP/$1.$h.rc" ]; do
			[ $i -lt 3000 ] || fail "$1: the run on $h still going after 300 s"
			sleep 0.1; i=$((i + 1))
		done
		[ "$(cat "$NG_TMP/$1.$h.rc")" = 0 ] ||
			{ cat "$NG_TMP/$1.$h.out"; fail "$1: the run on $h exited $(cat "$NG_TMP/$1.$h.rc")"; }
	done
	ng_until_gone $W "$NG_TMP/$1.json"
	wait $W || { cat "$NG_TMP/$1.werr"; fail "$1: watch exited $?"; }
}

note "healthy jobs on a loaded machine: no straggler"
sh -c 'while :; do :; done' &
hog1=$!
sh -c 'while :; do :; done' &
hog2=$!
NG_AT_EXIT="kill $hog1 $hog2 2>/dev/null; $NG_AT_EXIT"
# (ng_until_grep counts in i)
for run in 1 2; do
	job h$run -- --iters 30
	job_end h$run
	assert_grep '"job": "h'$run-$$'"' "$NG_TMP/h$run.json"
	assert_no_grep '"type": "straggler"' "$NG_TMP/h$run.json"
done

note "rank 2 delayed 20 ms before each call, still loaded: named within 10 s"
job d NCCLGUARD_INJECT=delay:ms=20,rank=2 -- --iters 20
n=0
until grep -q '"type": "straggler"' "$NG_TMP/d.json"; do
	[ $n -lt 600 ] || { cat "$NG_TMP/d.json"; fail "no straggler record within 60 s"; }
	sleep 0.1; n=$((n + 1))
done
named=$(python3 -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$GO")
note "named $named s after the job's start"
kill $hog1 $hog2 2>/dev/null
job_end d
python3 - "$NG_TMP/d.json" "$named" <<'PY' || { cat "$NG_TMP/d.json"; fail "the straggler records"; }
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["type"] == "straggler"]
first = s[0]
assert first["state"] == "start", first
assert (first["rank"], first["host"]) == (2, "hostb"), first
assert 14 <= first["late_ms"] <= 26, first
assert first["comm_hash"].startswith("0x") and first["window_calls"] == 4, first
assert all(r["rank"] == 2 for r in s if r["state"] == "start"), s
assert float(sys.argv[2]) <= 10, "named %s s after the job's start" % sys.argv[2]
PY
echo "watch stragglers: ok"
