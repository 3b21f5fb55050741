#!/bin/sh
# The API census in the analyzer, on traces ng_trace_gen writes:
#   - all known, the device API there: no api_unknown, the summary's line
#     on GPU-initiated traffic (and the HTML's "Not seen"), api_census in
#     report.json;
#   - 3 of 4 processes with the same unknown functions and one with
#     others: api_unknown once per distinct (version, set), with its
#     processes; 20 unknown named 16 and "and 4 more";
#   - a census that could not run: said in api_unknown;
#   - a census whose counts cannot be (more unknown than exported) or
#     whose list is not of nccl* names: dropped as implausible;
#   - the same trace without census events: no api_census, no line.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
cd "$NG_TMP" || exit 1

an() {
	f=$1; shift
	"$NG_BIN" analyze "$@" --json "$f.json" > "$f.txt" 2> "$f.err"
	rc=$?
	assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$f.err"
	return $rc
}
js() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1.json"; }
unknowns() { js "$1" "'|'.join(i['detail'] for i in r['incomplete'] if i['what'] == 'api_unknown')"; }

# job FILE CENSUS...: 4 ranks of one comm, 3 all-reduces each, rank r's
# census the r-th argument ("" for none).
job() {
	out=$1; shift
	{
		for r in 0 1 2 3; do
			echo "$r 0 proc $r 4"
			echo "$r 10 initb c0 4 $r"
			echo "$r 20 inite c0 4 $r"
			eval "c=\${$((r + 1))}"
			[ -z "$c" ] || echo "$r 30 census $c"
			for i in 1 2 3; do
				t=$((i * 1000))
				echo "$r $t enq c0 $i 0 allreduce 1024 -1 4 0 $t"
				echo "$r $((t + 500)) done c0 $i 0 allreduce 1024 $((t + 10)) $((t + 400)) 4 -1"
			done
		done
	} > "$out.script"
	"$GEN" -o "$out" --ranks 4 --script "$out.script" || fail "gen $out"
}

note "all known, with the device API"
k="22809 53 0 - 1 -"
job known "$k" "$k" "$k" "$k"
an known known --html known.html || fail "known: exit $rc"
assert_grep "Not seen:.* GPU-initiated traffic (the libnccl of 4 processes exports NCCL's device API);" known.html
assert_eq "$(unknowns known)" "" "api_unknown of a known library"
assert_no_grep INCOMPLETE known.txt
assert_grep "^Not recorded: GPU-initiated traffic (the libnccl of 4 processes exports NCCL's device API" known.txt
assert_eq "$(js known "r['api_census']")" \
	"{'processes': 4, 'failed': 0, 'device_api_processes': 4, 'gpu_initiated_unrecorded': True}" \
	"api_census of the known trace"

note "no census events: as before"
job none "" "" "" ""
an none none || fail "none: exit $rc"
assert_eq "$(js none "'api_census' in r")" False "api_census without events"
assert_no_grep "Not recorded" none.txt

note "unknown functions, once per distinct set"
a="23100 55 2 ncclFoo,ncclBar 0 -"
b="23100 54 1 ncclBaz 0 -"
job some "$a" "$a" "$b" "$a"
an some some || fail "some: exit $rc"
assert_eq "$(unknowns some)" "NCCL 2.31.0 at /usr/lib/libnccl.so.2 exports 2 functions ncclguard does not interpose: ncclFoo, ncclBar; their calls are not recorded (3 processes)|NCCL 2.31.0 at /usr/lib/libnccl.so.2 exports 1 function ncclguard does not interpose: ncclBaz; its calls are not recorded" "api_unknown of two sets"
assert_grep "^INCOMPLETE" some.txt
assert_grep "! api_unknown: NCCL 2.31.0 at /usr/lib/libnccl.so.2 exports 2 functions" some.txt
assert_no_grep "Not recorded" some.txt

note "more unknown than named"
names=ncclF1; i=2
while [ $i -le 16 ]; do names="$names,ncclF$i"; i=$((i + 1)); done
m="23200 70 20 $names 0 -"
job many "$m" "$m" "$m" "$m"
an many many || fail "many: exit $rc"
assert_grep "exports 20 functions ncclguard does not interpose: ncclF1, ncclF2, .*, ncclF16, and 4 more; their calls" many.txt

note "a census that could not run"
e="22809 0 0 - 0 not-an-ELF-file"
job failed "$e" "$k" "$k" "$k"
an failed failed || fail "failed: exit $rc"
assert_eq "$(unknowns failed)" "the census of NCCL 2.28.9's functions at /usr/lib/libnccl.so.2 could not run (not-an-ELF-file): functions a newer NCCL added, whose calls are not recorded, would go unnoticed" "api_unknown of a failed census"
assert_eq "$(js failed "r['api_census']['failed'], r['api_census']['device_api_processes']")" "1 3" \
	"api_census of the failed trace"

note "implausible censuses are dropped"
job bad "22809 3 5 ncclA,ncclB 0 -" "22809 53 1 rm,-rf 0 -" "$k" "$k"
an bad bad || fail "bad: exit $rc"
assert_eq "$(unknowns bad)" "" "api_unknown of implausible censuses"
assert_eq "$(js bad "r['api_census']['processes']")" 2 "censuses kept"
assert_grep "events_implausible" bad.txt
echo ok
