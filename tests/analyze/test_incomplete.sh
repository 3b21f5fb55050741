#!/bin/sh
# What the report could not see is said at the top of every report, never
# hidden: a folder given twice is read once (same counts), a rank without
# events is named and the findings on its comm say so, a process without
# process_info is never "rank -1", another job's events are dropped and
# counted, the run record's bad news is repeated, and --fail-on
# incomplete exits 5.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
cd "$NG_TMP" || exit 1

# an FILE ARGS...: analyze with report.json in FILE.json, summary in FILE.txt
an() {
	f=$1; shift
	"$NG_BIN" analyze "$@" --json "$f.json" > "$f.txt" 2> "$f.err"
	rc=$?
	assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$f.err"
	return $rc
}
# js FILE EXPR: a Python expression on report.json `r`
js() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1.json"; }
whats() { js "$1" "' '.join(sorted(i['what'] for i in r['incomplete']))"; }
counts() { js "$1" "r['events'], [(c['op'], c['bytes'], c['calls']) for c in r['collectives']], len(r['ranks'])"; }

"$GEN" -o T --ranks 4 --iters 30 --slow-rank 1 --slow-ms 2 || fail gen

note "one folder, read once"
an one T || fail "T: exit $rc"
assert_eq "$(whats one)" "" "a complete trace's incomplete[]"
assert_no_grep INCOMPLETE one.txt
ln -s "$PWD/T" S
for args in "T T" "T T/ust" "T/ust T" "T S" "T T/ust/uid/0/64-bit"; do
	# shellcheck disable=SC2086
	an twice $args || fail "$args: exit $rc"
	assert_eq "$(counts twice)" "$(counts one)" "counts of analyze $args"
	assert_eq "$(whats twice)" folder_twice "incomplete[] of analyze $args"
	assert_eq "$(head -n 1 twice.txt)" "INCOMPLETE: this report could not see everything" \
		"first line of the summary of analyze $args"
done

note "a rank's stream missing"
cp -r T M
rm M/ust/uid/0/64-bit/channel0_2
an miss M || fail "missing stream: exit $rc"
# The reader sees a per-CPU file missing, the matcher a rank without events.
assert_eq "$(whats miss)" "rank_without_events stream_missing" "incomplete[] without rank 2"
js miss "[i['detail'] for i in r['incomplete'] if i['what'] == 'rank_without_events'][0]" |
	grep -q "rank 2 of 4" ||
	fail "rank 2 not named: $(js miss "r['incomplete']")"
assert_eq "$(head -n 1 miss.txt)" "INCOMPLETE: this report could not see everything" "summary"
assert_grep "rank_without_events: rank 2 of 4" miss.txt
# Without rank 1 (the slow one) nobody may be called the straggler.
cp -r T M1
rm M1/ust/uid/0/64-bit/channel0_1
an miss1 M1 || fail "missing straggler: exit $rc"
assert_eq "$(js miss1 "len(r['stragglers'])")" 0 "stragglers without the slow rank's events"
! grep "straggler:" miss1.txt | grep -v "no events" | grep -q . ||
	fail "a straggler named without a word on the missing rank: $(grep straggler: miss1.txt)"
# HTML: the notice comes before the findings.
"$NG_BIN" analyze M --html miss.html > /dev/null || fail "html: exit $?"
python3 - miss.html <<'PY' || fail "HTML: the incomplete notice is not above the findings"
import sys
h = open(sys.argv[1], encoding="utf-8").read()
i, f = h.find("Incomplete"), h.find("<h2>Findings")
assert 0 <= i < f and "rank_without_events" in h[i:f], (i, f)
PY

note "a hang whose comm lacks a rank says so"
"$GEN" -o H --ranks 4 --iters 6 --skip-last 3 || fail gen
rm H/ust/uid/0/64-bit/channel0_0
an hang H || fail "hang: exit $rc"
grep "hang:" hang.txt | grep -q "rank 0 has no events in the trace: this finding may be wrong" ||
	fail "the hang does not say rank 0 has no events: $(grep hang: hang.txt)"

note "a straggler without process_info is named by host:pid, never rank -1"
{
	echo "0 0 initb c0 2 0"; echo "1 0 initb c0 2 1"
	echo "0 1 inite c0 2 0"; echo "1 1 inite c0 2 1"
	i=1
	while [ $i -le 16 ]; do
		t=$((i * 10000))
		echo "0 $((t + 10)) enq c0 $i 0 allreduce 1024 -1 2 0 $t"
		echo "1 $((t + 2010)) enq c0 $i 0 allreduce 1024 -1 2 0 $((t + 2000))"
		echo "0 $((t + 3000)) done c0 $i 0 allreduce 1024 $((t + 2020)) $((t + 2900)) 2 -1"
		echo "1 $((t + 3000)) done c0 $i 0 allreduce 1024 $((t + 2020)) $((t + 2900)) 2 -1"
		i=$((i + 1))
	done
} > noinfo.txt
"$GEN" -o P --ranks 2 --script noinfo.txt || fail gen
an noinfo P || fail "no process_info: exit $rc"
assert_grep "straggler: process node0:4007 (rank unknown" noinfo.txt
assert_no_grep "rank -1" noinfo.txt
assert_eq "$(js noinfo "[(s['rank'], s['host'], s['pid']) for s in r['stragglers']]")" \
	"[(None, 'node0', 4007)]" "stragglers[] of a process without process_info"

note "a hang among processes without process_info names no rank -1"
{
	echo "0 0 initb c0 2 0"; echo "1 0 initb c0 2 1"
	echo "0 1 inite c0 2 0"; echo "1 1 inite c0 2 1"
	for i in 1 2 3; do
		t=$((i * 10000))
		echo "0 $((t + 10)) enq c0 $i 0 allreduce 1024 -1 2 0 $t"
		echo "1 $((t + 10)) enq c0 $i 0 allreduce 1024 -1 2 0 $t"
		echo "0 $((t + 3000)) done c0 $i 0 allreduce 1024 $((t + 20)) $((t + 2900)) 2 -1"
		echo "1 $((t + 3000)) done c0 $i 0 allreduce 1024 $((t + 20)) $((t + 2900)) 2 -1"
	done
	echo "0 40010 enq c0 4 0 allreduce 1024 -1 2 0 40000"
	echo "0 5040000.0 timeout c0 4 allreduce collective"
} > noinfo_hang.txt
"$GEN" -o PH --ranks 2 --script noinfo_hang.txt || fail gen
an noinfo_hang PH || fail "hang without process_info: exit $rc"
assert_grep "hang: allreduce seq 4" noinfo_hang.txt
assert_no_grep "rank -1\|ranks -1\|,-1" noinfo_hang.txt
assert_grep "?: a process whose process_info is not in the trace" noinfo_hang.txt

note "two jobs in one trace"
# Job B (2 processes) starts first; job A (4) is reported, B counted.
"$GEN" -o J/a --ranks 4 --iters 20 --job A --start-ms 50 || fail gen
"$GEN" -o J/b --ranks 2 --iters 10 --job B --vpid-base 5000 --comm abcdef --seed 3 || fail gen
an ja J/a || fail "job A alone: exit $rc"
an jb J/b || fail "job B alone: exit $rc"
an jobs J || fail "two jobs: exit $rc"
assert_eq "$(counts jobs)" "$(counts ja)" "counts of the two-job trace against job A's"
assert_eq "$(js jobs "r['job'], r['other_job_events']")" "A $(js jb "r['events']")" \
	"job and other_job_events"
assert_eq "$(whats jobs)" other_job "incomplete[] of two jobs"
assert_grep "other_job: trace holds 2 jobs: A (4 processes), B (2 processes); reported A" jobs.txt
an jobb J --job B || fail "--job B: exit $rc"
assert_eq "$(counts jobb)" "$(counts jb)" "counts of --job B"
an jobc J --job C && fail "--job C: exit 0"
assert_eq "$rc" 1 "--job C: exit"
assert_grep "no event of that job" jobc.err
# The run record names the job.
echo '{"schema": "ncclguard-run/1", "job": "B", "status": "finished", "disk_full": false}' \
	> J/run.json
an jobrec J || fail "run.json job B: exit $rc"
assert_eq "$(counts jobrec)" "$(counts jb)" "counts with run.json naming B"
rm J/run.json

note "the run record"
cp -r T R
cat > R/run.json <<'JSON'
{"schema": "ncclguard-run/1", "job": "", "host": "node0", "status": "launcher_killed",
 "disk_full": true, "disk_detail": "No space left on device", "free_bytes_start": 1048576,
 "free_bytes_end": 0, "consumer_error": "", "some_future_key": 3}
JSON
an rec R || fail "run record: exit $rc"
assert_eq "$(whats rec)" "disk_full launcher_killed" "incomplete[] from run.json"
assert_grep "No space left on device" rec.txt
printf '{"schema": "ncclguard-run/1", "job": ' > R/run.json
an recbad R || fail "a bad run record must not stop the analysis: exit $rc"
assert_eq "$(whats recbad)" run_record_unreadable "incomplete[] of a bad run.json"
assert_eq "$(counts recbad)" "$(counts one)" "counts with a bad run.json"

note "--fail-on"
an f1 T --fail-on incomplete || fail "complete trace, --fail-on incomplete: exit $rc"
an f2 M --fail-on incomplete
assert_eq "$rc" 5 "missing rank, --fail-on incomplete: exit"
assert_grep "fail-on: incomplete" f2.err
an f3 T --fail-on hang,mismatch
assert_eq "$rc" 0 "a straggler, --fail-on hang,mismatch: exit"
an f4 T --fail-on any
assert_eq "$rc" 5 "a straggler, --fail-on any: exit"
an f5 T --fail-on straggler
assert_eq "$rc" 5 "a straggler, --fail-on straggler: exit"
[ -s f5.json ] || fail "--fail-on: the report was not written"
an f6 T --fail-on hangs
assert_eq "$rc" 2 "--fail-on hangs (unknown kind): exit"
an f7 T --fail-on hang,
assert_eq "$rc" 2 "--fail-on 'hang,': exit"
echo "incomplete: ok"
