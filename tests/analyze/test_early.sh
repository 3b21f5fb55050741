#!/bin/sh
# Findings early: a hang in the middle of a long trace, while the job goes
# on on another comm, is said on stderr (--early) as soon as the rank that
# never entered it has said all it will, long before the trace is read;
# the report is the same with or without it; a healthy trace says nothing
# early; every early line on the golden traces is a hang the report holds.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
cd "$NG_TMP" || exit 1

# Host nodeA: ranks 0-3 on comm aaa; seq 1-5 run, ranks 0-2 enter seq 6,
# rank 3 never does, and nodeA's events stop there (1 ms in).
{
	for r in 0 1 2 3; do
		echo "$r 0 proc $r 8"
		echo "$r 10 initb aaa 4 $r"
		echo "$r 20 inite aaa 4 $r"
		for s in 1 2 3 4 5; do
			t=$((s * 150))
			echo "$r $((t + 5)) enq aaa $s 0 allreduce 1024 -1 4 0 $t"
			echo "$r $((t + 100)) done aaa $s 0 allreduce 1024 $((t + 10)) $((t + 90)) 4 -1"
		done
		[ "$r" = 3 ] || echo "$r 1005 enq aaa 6 0 allreduce 1024 -1 4 0 1000"
	done
} > a.txt
# Host nodeB: ranks 4-7 on comm bbb, 40,000 all-reduces over 4 s.
awk 'BEGIN {
	for (r = 0; r < 4; r++) {
		printf "%d 0 proc %d 8\n%d 10 initb bbb 4 %d\n%d 20 inite bbb 4 %d\n", r, r + 4, r, r, r, r
		for (s = 1; s <= 40000; s++) {
			t = s * 100
			printf "%d %d enq bbb %d 0 allreduce 4096 -1 4 0 %d\n", r, t + 5, s, t
			printf "%d %d done bbb %d 0 allreduce 4096 %d %d 4 -1\n", r, t + 60, s, t + 10, t + 50
		}
	}
}' > b.txt
"$GEN" -o J/nodeA --ranks 4 --script a.txt --host nodeA || fail "gen nodeA"
"$GEN" -o J/nodeB --ranks 4 --script b.txt --host nodeB || fail "gen nodeB"

# an NAME ARGS...: report.json in NAME.json, summary NAME.txt, stderr NAME.err
an() {
	n=$1; shift
	"$NG_BIN" analyze "$@" --json "$n.json" > "$n.txt" 2> "$n.err"
	rc=$?
	assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$n.err"
	return $rc
}
hangs() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(' '.join('%016x:%d' % (int(h['comm_hash'], 16) if isinstance(h['comm_hash'], str) else h['comm_hash'], h['seq']) for h in r['hangs']))" "$1"; }

note "a hang mid-trace, said before the reader is through"
an early J --job none --early || fail "analyze --early: exit $rc"
grep "early:" early.err > lines.txt
assert_eq "$(wc -l < lines.txt)" 1 "early lines (stderr: $(cat early.err))"
assert_grep "early: hang: allreduce seq 6 on comm 0000000000000aaa never completed: ranks 0-2 waiting, rank 3 never entered it before its trace ended" lines.txt
seen=$(sed -n 's/.*, \([0-9]*\) events read)$/\1/p' lines.txt)
total=$(sed -n 's/.* collectives matched.*, \([0-9]*\) events, .*/\1/p' early.txt)
[ -n "$seen" ] && [ -n "$total" ] || fail "counts: early '$seen', total '$total'"
# nodeB's 320,000 events come after the hang: most still unread
[ "$seen" -lt $((total / 2)) ] || fail "early line after $seen of $total events"
assert_grep "hang: allreduce seq 6 on comm 0000000000000aaa never completed" early.txt
assert_no_grep "not what the whole trace shows" early.err

note "the report is the same with or without it; quiet without --early off a terminal"
an plain J --job none || fail "analyze: exit $rc"
cmp -s early.json plain.json || fail "report.json differs with --early"
assert_no_grep "early:" plain.err
an quiet J --job none --quiet || fail "analyze --quiet: exit $rc"
assert_no_grep "early:" quiet.err
"$NG_BIN" analyze J --early --quiet > /dev/null 2> both.err
assert_eq "$?" 2 "--early --quiet: usage error"

note "a job not settled (no --job, no run record): nothing said early"
an unsettled J --early || fail "analyze --early: exit $rc"
assert_no_grep "early:" unsettled.err

note "a healthy trace: nothing early"
"$GEN" -o H --ranks 8 --hosts 2 --iters 400 || fail "gen healthy"
an healthy H --job none --early || fail "healthy: exit $rc"
assert_no_grep "early:" healthy.err

note "a rank that skips the last call: its peers' timeout said early, the hang at the end"
"$GEN" -o S --ranks 4 --hosts 2 --iters 50 --skip-last 3 || fail "gen skip-last"
an skip S --job none --early || fail "skip: exit $rc"
assert_grep "early: timeout: rank [0-2]'s watchdog gave up on allreduce seq 50 on comm" skip.err
assert_no_grep "not what the whole trace shows" skip.err

note "every early hang of the golden traces is a hang of their report"
said=0
for d in "$NG_ROOT"/tests/analyze/traces/*/; do
	name=$(basename "$d")
	an "g-$name" "$d/trace" --job none --early || continue
	want=$(hangs "g-$name.json")
	for h in $(sed -n 's/.*early: hang: [a-z]* seq \([0-9]*\) on comm \([0-9a-f]*\) .*/\2:\1/p' \
		"g-$name.err"); do
		case " $want " in
		*" $h "*) said=$((said + 1)) ;;
		*) fail "$name: early hang $h not in the report's hangs ($want)" ;;
		esac
	done
	assert_no_grep "not what the whole trace shows" "g-$name.err"
done
note "$said early hangs on the golden traces, each in its report"
note "the summary at scale: 16 of a kind, the rest in report.json"
"$GEN" -o W --ranks 64 --hosts 32 --iters 20 --clock-error-ms 3 || fail "gen wide"
an wide W || fail "wide: exit $rc"
assert_eq "$(grep -c '^     clock: host' wide.txt)" 16 "clock lines in the summary"
assert_grep "and 15 more clock findings (see findings\[\] in report.json)" wide.txt
assert_grep "clock: host node31's clock is 93.0 ms" wide.txt
assert_eq "$(python3 -c "import json; print(sum(f['kind'] == 'clock' for f in json.load(open('wide.json'))['findings']))")" 31 "clock findings in report.json"
assert_grep "and 48 more ranks (see comm_fraction\[\] in report.json)" wide.txt
assert_eq "$(grep -c '^  rank ' wide.txt)" 16 "rank lines in the summary"
# The HTML report's cards: as many of a kind as the summary.
"$NG_BIN" analyze W --html wide.html > /dev/null 2>&1 || fail "wide: html"
assert_eq "$(grep -o 'clock</span>host node[0-9]*' wide.html | wc -l)" 16 "clock cards in the HTML"
assert_grep "and 15 more clock findings (see findings\[\] in report.json)" wide.html
echo "early: ok"
