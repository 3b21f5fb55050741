# Fork safety: a child of a process in which the shim already runs gets its
# own watchdog when it uses NCCL, and its hang is caught.  No tracer here:
# under ASan (gcc 12), a fork while lttng-ust's listener threads allocate can
# leave the sanitizer allocator's lock held in the child, a limitation of
# that runtime (glibc's malloc is fork-safe).
. "$NG_ROOT/tests/lib.sh"
export LD_LIBRARY_PATH="$NG_SIM"
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_TRACE=0 NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_DUMP_DIR="$NG_TMP" \
	RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 timeout 20 "$NG_BUILD/tests/preload/forker" >"$NG_TMP/out" 2>"$NG_TMP/err" ||
	fail "forker failed: $(cat "$NG_TMP/err")"
assert_grep "child exit 4" "$NG_TMP/out"
assert_grep "host call ncclCommInitRank .* communicator init" "$NG_TMP/err"

# The parent's communicators are not the child's: a child forked while the
# parent's all-reduce is in flight (1.5 s of simulated latency, inside the
# 2 s timeout) starts its own watchdog and must not report the parent's
# call, nor act on it.
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_TRACE=0 NCCLGUARD_TIMEOUT=2 NCCLGUARD_ON_TIMEOUT=exit \
	NCCLGUARD_DUMP_DIR="$NG_TMP" NCCLSIM_LATENCY_US=1500000 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
	timeout 20 "$NG_BUILD/tests/preload/forker" inflight >"$NG_TMP/in.out" 2>"$NG_TMP/in.err" ||
	fail "forker inflight failed: $(cat "$NG_TMP/in.err")"
assert_grep "child exit 0" "$NG_TMP/in.out"
assert_no_grep "not complete" "$NG_TMP/in.err"

# Under a flight ring folder the child gets its own file, host-call slots
# included: the forking thread, which called NCCL before, brings its slot
# along.  A child that exits inside its hung init leaves that file for
# `ncclguard run`.
for mode in inflight hang; do
	FL="$NG_TMP/flight-$mode"
	mkdir -m 700 "$FL"
	arg=$mode; [ $mode = hang ] && arg=
	LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_TRACE=0 NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_TIMEOUT=2 \
		NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_DUMP_DIR="$NG_TMP" NCCLGUARD_FLIGHT_DIR="$FL" \
		NCCLGUARD_LOG=debug NCCLSIM_LATENCY_US=$([ $mode = hang ] && echo 0 || echo 1500000) \
		RANK=0 WORLD_SIZE=$([ $mode = hang ] && echo 2 || echo 1) LOCAL_RANK=0 \
		timeout 20 "$NG_BUILD/tests/preload/forker" $arg >"$NG_TMP/fl.out" 2>"$NG_TMP/fl.err" ||
		fail "forker $mode (flight) failed: $(cat "$NG_TMP/fl.err")"
	assert_eq "$(grep -c "flight ring file $FL/[0-9]*\.ring\$" "$NG_TMP/fl.err")" 2 \
		"$mode: flight ring files opened"
	assert_no_grep "slots already in use" "$NG_TMP/fl.err"
done
assert_eq "$(ls "$FL" | wc -l)" 1 "hang: files left (the child's, which died inside its init)"
