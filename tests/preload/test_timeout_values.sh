# Timeout values (issue 23): above a year, or inf/never, means no timeout
# and a healthy job runs to its end (a wrapped seconds-to-ns conversion once
# timed every call out at 0.0 s); a bad value is refused with a message and
# the default kept; `ncclguard run --timeout` refuses one before it starts.
. "$NG_ROOT/tests/lib.sh"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
JOB="$NG_BUILD/tests/preload/job"
G="LD_PRELOAD=$NG_PRELOAD NCCLGUARD_DUMP_DIR=$NG_TMP NCCLGUARD_ON_TIMEOUT=exit"

# healthy TAG ENV...: a 2-rank job of 5 collectives ends with status 0
healthy() {
	_t=$1; shift
	launch "$_t" 2 $G "$@" -- "$JOB" "$NG_TMP/$_t.id" 5
	wait_ranks "$_t" 2 30
	for _r in 0 1; do
		[ "$(rc_of "$_t" $_r)" = 0 ] || { show_rank "$_t" $_r; fail "$*: rank $_r exit $(rc_of "$_t" $_r)"; }
		assert_no_grep "not returned\|not complete" "$NG_TMP/$_t.$_r.err"
	done
}

note "inf, never and values above a year: no timeout, said once"
n=0
for var in NCCLGUARD_TIMEOUT NCCLGUARD_INIT_TIMEOUT; do
	for v in inf never 1e99 2e10 31536001; do
		n=$((n + 1))
		healthy never$n "$var=$v"
		assert_grep "$var='$v': no [a-z]* timeout (above one year means never)" "$NG_TMP/never$n.0.err"
		assert_eq "$(grep -c 'means never' "$NG_TMP/never$n.0.err")" 1 "$var=$v: info lines"
	done
done

note "a year itself is a timeout like any other"
healthy year NCCLGUARD_TIMEOUT=31536000
assert_no_grep "means never" "$NG_TMP/year.0.err"

note "bad values are refused by name, the default kept, the job unharmed"
n=0
for v in 0 -1 nan 5s 1e 0x10; do	# " 5": test_config (launch splits on spaces)
	n=$((n + 1))
	healthy bad$n "NCCLGUARD_TIMEOUT=$v"
	assert_grep "NCCLGUARD_TIMEOUT='$v': .*; keeping 600 s" "$NG_TMP/bad$n.0.err"
done

note "below 1 ms (every call would time out, and exit 4 here): refused, the job unharmed"
for v in 1e-300 0.0009; do
	n=$((n + 1))
	healthy bad$n "NCCLGUARD_TIMEOUT=$v" "NCCLGUARD_INIT_TIMEOUT=$v"
	assert_grep "NCCLGUARD_TIMEOUT='$v': below 1 ms.*; keeping 600 s" "$NG_TMP/bad$n.0.err"
	assert_grep "NCCLGUARD_INIT_TIMEOUT='$v': below 1 ms.*; keeping 300 s" "$NG_TMP/bad$n.0.err"
done

note "the policy file's [timeouts]: never there too"
printf '[timeouts]\ninit = inf\ncollective = 1e99\n' >"$NG_TMP/never.conf"
healthy polnever "NCCLGUARD_POLICY=$NG_TMP/never.conf" NCCLGUARD_LOG=verbose
assert_grep "collective timeout never" "$NG_TMP/polnever.0.err"
assert_grep "init timeout never" "$NG_TMP/polnever.0.err"

note "a hang report under a collective timeout of never is valid JSON (timeout_s null)"
launch initnever 1 $G NCCLGUARD_TIMEOUT=never NCCLGUARD_INIT_TIMEOUT=1 -- env WORLD_SIZE=2 "$JOB" "$NG_TMP/initnever.id" 1
wait_ranks initnever 1 20
[ "$(rc_of initnever 0)" = 4 ] || { show_rank initnever 0; fail "hung init: exit $(rc_of initnever 0), want 4"; }
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(d["timeout_s"] is not None)' \
	"$NG_TMP"/ncclguard-hang-rank0-pid*.json || fail "hang report: timeout_s not null, or not JSON"

note "ncclguard run --timeout: a bad value is a usage error before anything starts"
for v in 0 -1 nan 5s " 5" "" inf-; do
	rc=0
	(cd "$NG_TMP" && "$NG_BIN" run -o "$NG_TMP/trace" --timeout "$v" -- true) \
		>"$NG_TMP/run.out" 2>"$NG_TMP/run.err" || rc=$?
	assert_eq "$rc" 2 "ncclguard run --timeout '$v'"
	assert_grep "ncclguard run: --timeout '$v': " "$NG_TMP/run.err"
	[ ! -e "$NG_TMP/trace" ] || fail "--timeout '$v': a trace folder was made"
done
echo "PASS timeout values"
