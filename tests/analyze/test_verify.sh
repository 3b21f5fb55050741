#!/bin/sh
# Output verification in the report (docs/verification.md#in-the-report):
# the fingerprints of one (comm, seq) compared across ranks, a
# data_mismatch finding naming the ranks whose hash differs from the
# majority's (or all, where none holds one), verification[]'s counts and
# the summary's line.  Scripted traces (ng_trace_gen --script, `fp`
# lines): a rank's fingerprints come after its call, at times that
# interleave with the other ranks'.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
cd "$NG_TMP" || exit 1

A=aaaa000000000001
B=5555000000000002
S4="0+1024,4096+1024,8192+1024,16384+1024"

# js FILE EXPR: a Python expression on report.json `r`
js() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
# an NAME RANKS ARGS...: NAME.s's trace analyzed into NAME.txt and
# NAME.json; the exit status in NAME.rc
an() {
	n=$1 k=$2
	shift 2
	"$GEN" -o "$n" --ranks "$k" --script "$n.s" || fail "gen $n"
	"$NG_BIN" analyze "$n" --quiet --json "$n.json" --html "$n.html" "$@" >"$n.txt" \
		2>"$n.err"
	echo $? >"$n.rc"
}
# procs N EVERY [WORLD]: process_info of ranks 0..N-1 of a world of
# WORLD (N)
procs() {
	r=0
	while [ "$r" -lt "$1" ]; do
		echo "$r 0 proc $r ${3:-$1} $2"
		r=$((r + 1))
	done
}
# fp RANK US COMM SEQ OP NRANKS HASH [BYTES SLICES COMPARED]
fp() {
	echo "$1 $2 fp $3 $4 $5 $6 ${8:-1048576} ${9:-$S4} ${10:-4096} $7"
}
# finding NAME: the data_mismatch findings' summaries, one a line
finding() { js "$1.json" '"\n".join(f["summary"] for f in r["findings"] if f["kind"] == "data_mismatch")'; }
# counts NAME COMM: compared mismatched unpaired of COMM in verification[]
counts() {
	js "$1.json" "' '.join(' '.join(str(v[k]) for k in ('compared', 'mismatched', 'unpaired')) for v in r['verification'] if v['comm_hash'] == '0x$2')"
}

# job NAME BAD: a 4-rank job, an all-reduce, an all-gather and a
# broadcast sampled on comm A and an all-reduce on comm B; rank 2's
# all-gather output differs where BAD is 1
job() {
	h=2222
	[ "$2" = 1 ] && h=dead
	{
		procs 4 1024
		for r in 0 1 2 3; do
			t=$((1000 + 7 * r))
			fp $r $t $A 1023 allreduce 4 1111
			fp $r $((t + 2000)) $B 1023 allreduce 4 4444
			g=2222
			[ "$r" = 2 ] && g=$h
			fp $r $((t + 1000000 - 200000 * r)) $A 2047 allgather 4 $g 4194304
			fp $r $((t + 1500000)) $A 3071 broadcast 4 3333 2048 0+2048 2048
		done
		echo "2 1600000 inject corrupt $A 2047 allgather"
	} >"$1.s"
}

note "rank 2 held a different all-gather output: one finding naming it"
job bad 1
an bad 4 --fail-on data
assert_eq "$(cat bad.rc)" 5 "--fail-on data with a data_mismatch"
finding bad >bad.f
assert_eq "$(wc -l <bad.f)" 1 "one data_mismatch"
assert_grep "data mismatch: rank 2 (node0) held a different all-gather output from ranks 0, 1, 3 at seq 2047 on comm $A (4 MiB, 4 KiB compared in 4 slices); 1 of 3 verified calls on this comm differed" bad.f
assert_eq "$(js bad.json '[f["ranks"] for f in r["findings"] if f["kind"] == "data_mismatch"]')" "[[2]]" "the finding's ranks"
assert_eq "$(js bad.json '[f["severity"] for f in r["findings"] if f["kind"] == "data_mismatch"]')" "['warning']" "its severity"
assert_eq "$(counts bad $A)" "3 1 0" "comm A: compared, mismatched, unpaired"
assert_eq "$(counts bad $B)" "1 0 0" "comm B"
assert_grep "^verification: 4 calls compared on 2 comms (every 1024th all-reduce, all-gather, broadcast per comm), 1 mismatched$" bad.txt
assert_grep "next: run a GPU memory and link test" bad.txt
assert_grep 'id="verification"' bad.html
an bad 4 --fail-on hang,hardware
assert_eq "$(cat bad.rc)" 0 "--fail-on without data"
cp bad.json bad2.json
"$NG_BIN" analyze bad --quiet -j 1 --json bad1.json >/dev/null 2>&1 || fail "analyze -j 1"
assert_eq "$(js bad1.json 'r["verification"], [f["summary"] for f in r["findings"]]')" \
	"$(js bad2.json 'r["verification"], [f["summary"] for f in r["findings"]]')" "-j 1 reads the same"

note "the same job healthy: nothing found, every call counted"
job ok 0
an ok 4 --fail-on data
assert_eq "$(cat ok.rc)" 0 "--fail-on data, healthy"
assert_eq "$(finding ok)" "" "no data_mismatch"
assert_eq "$(counts ok $A)" "3 0 0" "comm A, healthy"
assert_eq "$(counts ok $B)" "1 0 0" "comm B, healthy"
assert_grep "^verification: 4 calls compared on 2 comms (every 1024th .*), 0 mismatched$" ok.txt

note "one rank differs at three seqs: one finding, its seqs aggregated"
{
	procs 4 1
	for s in 0 1 2 3 4; do
		for r in 0 1 2 3; do
			h=1000$s
			[ "$r" = 2 ] && [ "$s" != 1 ] && [ "$s" != 4 ] && h=bad$s
			fp $r $((100 * s + r)) $A $s allreduce 4 $h
		done
	done
} >agg.s
an agg 4
finding agg >agg.f
assert_eq "$(wc -l <agg.f)" 1 "one finding for three seqs"
assert_grep "held a different all-reduce output from ranks 0, 1, 3 at seq 0 " agg.f
assert_grep "; 3 of 5 verified calls on this comm differed; the same at seq 2, 3$" agg.f
assert_grep "^verification: 5 calls compared on 1 comm (every all-reduce, all-gather, broadcast per comm), 3 mismatched$" agg.txt

note "a large comm: its majority as ranges"
{
	procs 12 1024
	for r in 0 1 2 3 4 5 6 7 8 9 10 11; do
		h=1111
		[ "$r" = 5 ] && h=2222
		fp $r $((10 + r)) $A 1023 allreduce 12 $h
	done
} >big.s
an big 12
assert_grep "rank 5 (node0) held a different all-reduce output from the 11 ranks 0-4,6-11 at seq 1023" big.txt

note "two ranks of a 2-rank comm differ: no majority, both named"
{
	procs 2 1024
	fp 0 10 $B 1023 allreduce 2 1111
	fp 1 20 $B 1023 allreduce 2 2222
} >two.s
an two 2
finding two >two.f
assert_grep "data mismatch: no majority in the all-reduce output at seq 1023 on comm $B (1 MiB, 4 KiB compared in 4 slices): rank 0 holds one output, rank 1 holds another; the check cannot tell which is wrong" two.f
assert_eq "$(js two.json '[f["ranks"] for f in r["findings"] if f["kind"] == "data_mismatch"]')" "[[0, 1]]" "both ranks named"
assert_eq "$(counts two $B)" "1 1 0" "the 2-rank comm"

note "2 against 2: no majority, each pair's output"
{
	procs 4 1024
	for r in 0 1 2 3; do
		h=1111
		[ "$r" -ge 2 ] && h=2222
		fp $r $((10 + r)) $A 1023 broadcast 4 $h 4096 0+4096 4096
	done
} >half.s
an half 4
assert_grep "no majority in the broadcast output at seq 1023 on comm $A (4 KiB, all of it compared): ranks 0, 1 hold one output, ranks 2, 3 hold another" half.txt

note "a fingerprint from one rank only, and one of other slices: unpaired"
{
	procs 4 1024
	fp 1 10 $A 1023 allreduce 4 1111
	fp 0 20 $A 2047 allreduce 4 1111
	fp 1 20 $A 2047 allreduce 4 1111 1048576 "0+1024,8192+1024,12288+1024,16384+1024"
} >lone.s
an lone 4 --fail-on data
assert_eq "$(cat lone.rc)" 0 "nothing compared, nothing found"
assert_eq "$(counts lone $A)" "0 0 2" "unpaired, not compared"
assert_grep "^verification on (every 1024th call per comm), no call compared: the ranks' fingerprints never met; 2 sampled calls with one rank's fingerprint only or different slices$" lone.txt

note "verification on, no fingerprint: nothing was compared; a rank with it off is named"
{
	procs 3 1024 4
	echo "3 0 proc 3 4 0"
} >none.s
an none 4
assert_grep "^verification on (every 1024th call per comm), no call compared: the comms made fewer calls; off on rank 3$" none.txt
assert_eq "$(js none.json 'r["verification"]')" "[]" "verification[] empty"
assert_grep 'id="verification"' none.html

note "verification off: no key, no line, no section"
procs 4 0 >off.s
an off 4
assert_eq "$(js off.json '"verification" in r')" "False" "no verification[]"
assert_no_grep "verification" off.txt
assert_no_grep 'id="verification"' off.html

echo "PASS"
