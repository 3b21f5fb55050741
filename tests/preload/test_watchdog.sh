# Watchdog and injection on the CPU backend (issue 5): hangs are reported in
# time with what is stuck, and the configured action happens.
. "$NG_ROOT/tests/lib.sh"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
JOB="$NG_BUILD/tests/preload/job"
G="LD_PRELOAD=$NG_PRELOAD NCCLGUARD_DUMP_DIR=$NG_TMP"

waited_ok() {	# the reported wait is within timeout + 0.5 s
	w=$(sed -n 's/.*not complete after \([0-9.]*\) s.*/\1/p' "$1" | head -1)
	[ -n "$w" ] || { cat "$1"; fail "no timeout report in $1"; }
	awk "BEGIN { exit !($w >= $2 && $w <= $2 + 0.5) }" || fail "waited $w s for a $2 s timeout"
}

note "a rank that skips its last collective: the others report it and exit 4"
launch skip 3 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit -- "$JOB" "$NG_TMP/skip.id" 5 --skip 1:5
wait_ranks skip 3 20
for r in 0 2; do
	[ "$(rc_of skip $r)" = 4 ] || { show_rank skip $r; fail "rank $r: exit $(rc_of skip $r), want 4"; }
	assert_grep "allreduce seq 5 on comm [0-9a-f]* (3 ranks, 4.0 KiB) not complete" "$NG_TMP/skip.$r.err"
	waited_ok "$NG_TMP/skip.$r.err" 2
	assert_grep '"last_completed_seq": 4' "$NG_TMP/ncclguard-hang-rank$r-pid$(sed -n 's/.*pid \([0-9]*\).*/\1/p' "$NG_TMP/skip.$r.err" | head -1).json"
done
[ "$(rc_of skip 1)" = 0 ] || { show_rank skip 1; fail "the skipping rank should finish"; }

note "a dropped call: the same, named by the injection"
launch drop 3 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit "NCCLGUARD_INJECT=drop:rank=1,op=allreduce,seq=3" \
	-- "$JOB" "$NG_TMP/drop.id" 3
wait_ranks drop 3 20
assert_grep "injecting drop into allreduce seq 3" "$NG_TMP/drop.1.err"
for r in 0 2; do
	[ "$(rc_of drop $r)" = 4 ] || { show_rank drop $r; fail "drop rank $r: exit $(rc_of drop $r)"; }
	assert_grep "allreduce seq 3 on comm" "$NG_TMP/drop.$r.err"
done

note "a stalled host call is reported as a host-side hang"
launch stall 2 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit "NCCLGUARD_INJECT=stall:rank=0,op=allreduce,seq=2" \
	-- "$JOB" "$NG_TMP/stall.id" 3
wait_ranks stall 2 20
[ "$(rc_of stall 0)" = 4 ] || { show_rank stall 0; fail "stalled rank: exit $(rc_of stall 0)"; }
assert_grep "host call ncclAllReduce seq 2 .* has not returned after 2\.[0-4] s" "$NG_TMP/stall.0.err"
[ "$(rc_of stall 1)" = 4 ] || { show_rank stall 1; fail "peer of the stalled rank: exit $(rc_of stall 1)"; }

note "an injected error reaches the program as that result code"
launch err 2 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit "NCCLGUARD_INJECT=error:rank=0,op=allreduce,seq=2,code=ncclInternalError" \
	-- "$JOB" "$NG_TMP/err.id" 3
wait_ranks err 2 20
assert_grep "allreduce 2 returned 3" "$NG_TMP/err.0.out"
[ "$(rc_of err 0)" = 13 ] || { show_rank err 0; fail "error rank: exit $(rc_of err 0)"; }

note "an injected groupend error ends NCCL's group: the program that goes on is not left inside it"
launch gerr 2 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit "NCCLGUARD_INJECT=error:rank=0,op=groupend,count=1,code=ncclInternalError" \
	-- "$JOB" "$NG_TMP/gerr.id" 3 --group
wait_ranks gerr 2 20
assert_grep "groupend 1 returned 3" "$NG_TMP/gerr.0.out"
for r in 0 1; do
	[ "$(rc_of gerr $r)" = 0 ] || { show_rank gerr $r; fail "groupend error, rank $r: exit $(rc_of gerr $r)"; }
	assert_eq "$(grep -c 'ok$' "$NG_TMP/gerr.$r.out")" 3 "rank $r iterations ok after the groupend error"
done

note "a hung init is reported"
launch init 1 $G NCCLGUARD_INIT_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit -- env WORLD_SIZE=2 "$JOB" "$NG_TMP/init.id" 1
wait_ranks init 1 20
[ "$(rc_of init 0)" = 4 ] || { show_rank init 0; fail "hung init: exit $(rc_of init 0)"; }
assert_grep "host call ncclCommInitRankConfig .* communicator init" "$NG_TMP/init.0.err"

note "a nonblocking init or split that never completes is reported, though no call hangs"
launch nbinit 1 $G NCCLGUARD_INIT_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit -- env WORLD_SIZE=2 "$JOB" "$NG_TMP/nbinit.id" 1 --nonblocking
wait_ranks nbinit 1 20
[ "$(rc_of nbinit 0)" = 4 ] || { show_rank nbinit 0; fail "hung nonblocking init: exit $(rc_of nbinit 0)"; }
assert_grep "comm [0-9a-f]* (nonblocking initconfig) still initializing after 2\.[0-4] s" "$NG_TMP/nbinit.0.err"
assert_grep '"init_in_progress_s": 2\.' "$NG_TMP"/ncclguard-hang-rank0-pid$(sed -n 's/.*pid \([0-9]*\).*/\1/p' "$NG_TMP/nbinit.0.err" | head -1).json
launch nbsplit 2 $G NCCLGUARD_INIT_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit -- "$JOB" "$NG_TMP/nbsplit.id" 1 --nonblocking --split-skip 1
wait_ranks nbsplit 2 20
[ "$(rc_of nbsplit 0)" = 4 ] || { show_rank nbsplit 0; fail "hung nonblocking split: exit $(rc_of nbsplit 0)"; }
assert_grep "comm [0-9a-f]* (nonblocking split) still initializing after 2\.[0-4] s" "$NG_TMP/nbsplit.0.err"
[ "$(rc_of nbsplit 1)" = 0 ] || { show_rank nbsplit 1; fail "the rank that skipped the split should end"; }
# A split given up (its parent aborted) before the timeout is not reported.
launch nbgiveup 2 $G NCCLGUARD_INIT_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit -- "$JOB" "$NG_TMP/nbgiveup.id" 1 --nonblocking --split-skip 1 --split-giveup 500
wait_ranks nbgiveup 2 20
[ "$(rc_of nbgiveup 0)" = 0 ] || { show_rank nbgiveup 0; fail "a split given up: exit $(rc_of nbgiveup 0), want 0"; }
assert_grep "split given up" "$NG_TMP/nbgiveup.0.out"
grep -q "still initializing" "$NG_TMP/nbgiveup.0.err" && { show_rank nbgiveup 0; fail "a split given up was reported"; }
# A rank out of the split (NCCL_SPLIT_NOCOLOR) that never polls and goes on
# with the parent: not a hang.
launch nbnocolor 1 $G NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=exit -- "$JOB" "$NG_TMP/nbnocolor.id" 3 --nonblocking --split-nocolor --sleep 2
wait_ranks nbnocolor 1 20
[ "$(rc_of nbnocolor 0)" = 0 ] || { show_rank nbnocolor 0; fail "a rank out of the split: exit $(rc_of nbnocolor 0), want 0"; }
grep -q "still initializing" "$NG_TMP/nbnocolor.0.err" && { show_rank nbnocolor 0; fail "a rank out of the split was reported"; }
# abort: the comm is revoked (or aborted), and the program's poll ends with
# an error instead of going on for ever.
launch nbabort 1 $G NCCLGUARD_INIT_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=abort -- env WORLD_SIZE=2 "$JOB" "$NG_TMP/nbabort.id" 1 --nonblocking
wait_ranks nbabort 1 20
assert_grep "init returned [1-9]" "$NG_TMP/nbabort.0.out"
assert_grep "still initializing after 2\.[0-4] s.*action abort" "$NG_TMP/nbabort.0.err"

note "a stall injected into init is a host-side hang of the stalled rank"
launch initstall 2 $G NCCLGUARD_INIT_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit "NCCLGUARD_INJECT=stall:rank=0,op=init" \
	-- "$JOB" "$NG_TMP/initstall.id" 1
wait_ranks initstall 2 20
[ "$(rc_of initstall 0)" = 4 ] || { show_rank initstall 0; fail "stalled init: exit $(rc_of initstall 0)"; }
assert_grep "host call ncclCommInitRank[A-Za-z]* .* has not returned after 2\.[0-4] s" "$NG_TMP/initstall.0.err"

note "a hung call with more calls queued behind it than the watchdog remembers"
launch lost 2 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit -- "$JOB" "$NG_TMP/lost.id" 300 --stop 1:2
wait_ranks lost 2 20
[ "$(rc_of lost 0)" = 4 ] || { show_rank lost 0; fail "hung call behind 298 more: exit $(rc_of lost 0)"; }
assert_grep "collective seq 2 on comm [0-9a-f]* (2 ranks) not confirmed complete after more than 2\.[0-9] s; its record was overwritten" "$NG_TMP/lost.0.err"

note "warn keeps the job alive"
launch warn 2 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=warn -- "$JOB" "$NG_TMP/warn.id" 2 --skip 1:2
# The report, however long a loaded machine takes to start the job; then
# 2 s more, in which rank 0 must go on waiting and not be reported again.
i=0
until grep -q "allreduce seq 2 on comm" "$NG_TMP/warn.0.err" || [ -f "$NG_TMP/warn.0.rc" ] || [ $i -ge 600 ]; do
	sleep 0.1; i=$((i + 1))
done
assert_grep "allreduce seq 2 on comm" "$NG_TMP/warn.0.err"
sleep 2
[ -f "$NG_TMP/warn.0.rc" ] && { show_rank warn 0; fail "warn: rank 0 ended"; }
[ "$(grep -c 'not complete after' "$NG_TMP/warn.0.err")" = 1 ] || fail "warn: reported more than once"
wait_ranks warn 2 0

note "abort lets a program that checks ncclCommGetAsyncError shut down cleanly"
launch abort 2 $G NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=abort -- "$JOB" "$NG_TMP/abort.id" 3 --skip 1:3 --poll
wait_ranks abort 2 20
[ "$(rc_of abort 0)" = 7 ] || { show_rank abort 0; fail "abort: rank 0 exit $(rc_of abort 0), want 7"; }
assert_grep "async error" "$NG_TMP/abort.0.out"

note "abort ends a rank stalled inside a host call: revoke cannot, so it exits 4 after the grace period"
# The grace period follows the timeout (at least 1 s, at most 10 s): 1 s here.
launch abstall 2 $G NCCLGUARD_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=abort "NCCLGUARD_INJECT=stall:rank=0,op=allreduce,seq=5" \
	-- "$JOB" "$NG_TMP/abstall.id" 8
wait_ranks abstall 2 30
[ "$(rc_of abstall 0)" = 4 ] || { show_rank abstall 0; fail "stalled rank under abort: exit $(rc_of abstall 0), want 4"; }
assert_grep "host call ncclAllReduce seq 5 .* has not returned after 1\.[0-4] s.*action abort" "$NG_TMP/abstall.0.err"
assert_grep "comm [0-9a-f]* did not let go 1\.0 s after abort; exiting with status 4" "$NG_TMP/abstall.0.err"
# Its peer's collective fails once revoked: the program sees it and ends.
[ "$(rc_of abstall 1)" != killed ] || { show_rank abstall 1; fail "the stalled rank's peer did not end"; }
assert_grep "allreduce seq 5 on comm .* action abort" "$NG_TMP/abstall.1.err"

note "abort ends a rank stalled in init (no comm to abort yet) the same way"
launch abinit 2 $G NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=abort "NCCLGUARD_INJECT=stall:rank=0,op=init" \
	-- "$JOB" "$NG_TMP/abinit.id" 1
wait_ranks abinit 2 30
[ "$(rc_of abinit 0)" = 4 ] || { show_rank abinit 0; fail "stalled init under abort: exit $(rc_of abinit 0), want 4"; }
assert_grep "host call ncclCommInitRank[A-Za-z]* did not return 1\.0 s after its timeout, and it has no comm to abort; exiting with status 4" "$NG_TMP/abinit.0.err"
