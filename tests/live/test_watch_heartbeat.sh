#!/bin/sh
# A hang is seen whenever watch attaches: a 4-rank CPU-backend job of 20
# quick all-reduces under `ncclguard run --relay`, rank 3 skipping the
# last, so ranks 0-2 wait in seq 20 from about the first second on and
# write nothing more but their heartbeats.
#   a) `watch --json --stuck 3` started before the job (it attaches once
#      the job's session appears, after the calls): the hang, seq 20,
#      ranks 0-2 waiting, rank 3 not seen;
#   c) one waiting rank stopped (SIGSTOP): named silent while the others
#      beat; continued (SIGCONT): silent no more;
#   b) the same job with watch started 20 s after it (text): the hang
#      line, its wait counted from the call's entry.
# Bounds are generous (30 s) and every wait polls for its condition.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

ng_relayd_start "$NG_TMP/relay"
ng_host_up hosta
RELAY="net://127.0.0.1:$NG_RELAY_CTRL:$NG_RELAY_DATA"

# job TAG: the job under `run --relay` on hosta, in the background; the
# run's pid in $NG_TMP/TAG.pid, its status in $NG_TMP/TAG.rc.
job() {
	( ng_on hosta sh -c 'echo $$ >"$0"; exec "$@"' "$NG_TMP/$1.pid" \
		env LD_LIBRARY_PATH="$NG_SIM" NCCLGUARD_JOB="hb-$1-$$" NCCLGUARD_HEALTH_INTERVAL=0 \
		NCCLGUARD_VERIFY=0 "$NG_BIN" run --relay "$RELAY" -o "$NG_TMP/run.$1" \
		--timeout 600 --on-timeout warn -- "$EXAMPLE" --launch 4 --iters 20 --warmup 0 \
		--min-bytes 8 --max-bytes 8 --skip-seq 20 --skip-rank 3 \
		>"$NG_TMP/$1.out" 2>"$NG_TMP/$1.err"
	  echo $? >"$NG_TMP/$1.rc" ) &
	i=0
	until [ -s "$NG_TMP/$1.pid" ]; do
		[ $i -lt 100 ] || fail "job $1 did not start"
		sleep 0.1; i=$((i + 1))
	done
	NG_AT_EXIT="kill $(cat "$NG_TMP/$1.pid") 2>/dev/null; $NG_AT_EXIT"
}

# job_end TAG: SIGTERM to the run (it passes it to the job), waited for.
job_end() {
	kill "$(cat "$NG_TMP/$1.pid")" 2>/dev/null
	i=0
	until [ -f "$NG_TMP/$1.rc" ]; do
		[ $i -lt 600 ] || fail "job $1 still running 60 s after SIGTERM"
		sleep 0.1; i=$((i + 1))
	done
}

# ms: now, in milliseconds.
ms() { echo $(( $(date +%s%N) / 1000000 )); }

# until_py FILE PID WHAT CODE: within 30 s, while watch PID runs, a line
# of FILE (JSON) for which CODE (python, on `o`) is true; prints it.
until_py() {
	i=0
	until python3 - "$1" "$4" >"$NG_TMP/match" 2>/dev/null <<'PY'
import json, sys
for l in open(sys.argv[1]):
    try:
        o = json.loads(l)
    except ValueError:
        continue
    if eval(sys.argv[2]):
        print(json.dumps(o))
        sys.exit(0)
sys.exit(1)
PY
	do
		[ $i -lt 300 ] || { cat "$1"; fail "$3: not within 30 s"; }
		kill -0 "$2" 2>/dev/null || { cat "$1"; fail "$3: watch exited"; }
		sleep 0.1; i=$((i + 1))
	done
	cat "$NG_TMP/match"
}

note "a) watch first, then the job: the hang it attached after"
"$NG_BIN" watch "$NG_RELAY_URL" --json --stuck 3 --every 1 >"$NG_TMP/a.json" 2>"$NG_TMP/a.err" &
WA=$!
NG_AT_EXIT="kill $WA 2>/dev/null; $NG_AT_EXIT"
job a
t0=$(ms)
until_py "$NG_TMP/a.json" $WA "attached" \
	'o["type"] == "note" and o["note"].startswith("attached to")' >/dev/null
ta=$(ms)
until_py "$NG_TMP/a.json" $WA "the hang" 'o["type"] == "hang"' >"$NG_TMP/a.hang"
th=$(ms)
echo "a) attached $(( (ta - t0) / 1000 )).$(( (ta - t0) % 1000 / 100 )) s after the job started;" \
	"hang $(( (th - ta) / 1000 )).$(( (th - ta) % 1000 / 100 )) s after attaching"
python3 - "$NG_TMP/a.hang" >"$NG_TMP/a.pid1" <<'PY' || fail "a) the hang record"
import json, sys
o = json.loads(open(sys.argv[1]).read())
h = o["hang"]
assert o["job"].startswith("hb-a-"), o
assert h["op"] == "allreduce" and h["seq"] == 20, h
assert h["waiting_ranks"] == [0, 1, 2], h
# rank 3 not seen (its calls done before watch attached), or, where
# watch came in time for them, seen leave
assert (h["missing_ranks"] == [] and h["unseen_ranks"] == 1 and h["unseen_comm_ranks"] == [3]) \
    or (h["missing_ranks"] == [3] and h["unseen_ranks"] == 0), h
print("rank 3:", "not seen" if h["unseen_ranks"] else "missing", file=sys.stderr)
assert all(w["host"] == "hosta" and w["pid"] > 0 for w in h["waiting"]), h
assert h["waited_s"] >= 3 and h["silent"] == [], h
print([w["pid"] for w in h["waiting"] if w["rank"] == 1][0])
PY

note "c) a waiting rank stopped: silent; continued: no longer"
P1=$(cat "$NG_TMP/a.pid1")
kill -STOP "$P1"
NG_AT_EXIT="kill -CONT $P1 2>/dev/null; $NG_AT_EXIT"
t0=$(ms)
until_py "$NG_TMP/a.json" $WA "rank 1 silent" \
	'o["type"] == "progress" and o["hangs"] and [s["rank"] for s in o["hangs"][0]["silent"]] == [1]' \
	>"$NG_TMP/a.silent"
echo "c) silent $(( ($(ms) - t0) / 1000 )) s after SIGSTOP"
python3 - "$NG_TMP/a.silent" "$P1" <<'PY' || fail "c) the silent rank"
import json, sys
h = json.loads(open(sys.argv[1]).read())["hangs"][0]
s = h["silent"][0]
assert s["host"] == "hosta" and s["pid"] == int(sys.argv[2]), s
assert s["since_heartbeat_s"] > 6, s
assert h["seq"] == 20 and h["waiting_ranks"] == [0, 1, 2], h
PY
n=$(wc -l <"$NG_TMP/a.json")
kill -CONT "$P1"
t0=$(ms)
until_py "$NG_TMP/a.json" $WA "rank 1 beating again" \
	"o['type'] == 'progress' and o['hangs'] and o['hangs'][0]['silent'] == [] and o['time'] > $(date +%s)" \
	>/dev/null
echo "c) not silent $(( ($(ms) - t0) / 1000 )) s after SIGCONT"
job_end a
ng_until_gone $WA "$NG_TMP/a.json"
rc=0; wait $WA || rc=$?
assert_eq "$rc" 5 "a) watch's status after a hang"

note "b) watch 20 s after the job: the hang line"
job b
sleep 20
"$NG_BIN" watch "$NG_RELAY_URL" --stuck 3 --every 1 >"$NG_TMP/b.txt" 2>"$NG_TMP/b.err" &
WB=$!
NG_AT_EXIT="kill $WB 2>/dev/null; $NG_AT_EXIT"
t0=$(ms)
ng_until_grep "attached to" "$NG_TMP/b.txt" $WB
ta=$(ms)
ng_until_grep '^  HANG' "$NG_TMP/b.txt" $WB
th=$(ms)
echo "b) attached $(( (ta - t0) / 1000 )).$(( (ta - t0) % 1000 / 100 )) s after watch started;" \
	"hang $(( (th - ta) / 1000 )).$(( (th - ta) % 1000 / 100 )) s after attaching"
hang=$(grep '^  HANG' "$NG_TMP/b.txt" | head -n 1)
echo "$hang"
echo "$hang" | grep -q "allreduce seq 20, waiting [0-9]* s: ranks 0-2 (hosta) wait; not seen: rank 3$" ||
	fail "b) hang line: $hang"
# waited since the call's entry, not since watch came
w=$(echo "$hang" | sed -n 's/.*waiting \([0-9]*\) s.*/\1/p')
[ "$w" -ge 15 ] || fail "b) waited $w s, the job started 20 s before watch"
job_end b
ng_until_gone $WB "$NG_TMP/b.txt"
rc=0; wait $WB || rc=$?
assert_eq "$rc" 5 "b) watch's status after a hang"
echo PASS
