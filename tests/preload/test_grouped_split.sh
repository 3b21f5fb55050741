# Splits whose comm NCCL writes later are tracked.  Splits and shrinks
# inside ncclGroupStart/ncclGroupEnd, from one thread (the
# CPU backend's `simtest initall`): NCCL writes the new comms when the group
# ends, not when ncclCommSplit returns, and each is then tracked with its
# size and rank (the shim's debug line on registration).  The rank given
# NCCL_SPLIT_NOCOLOR gets no comm.  Nothing is reported as hung.
. "$NG_ROOT/tests/lib.sh"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
SIMTEST="$NG_BUILD/tests/sim/simtest"
[ -x "$SIMTEST" ] || fail "$SIMTEST not built"
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=debug NCCLGUARD_INIT_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=exit \
	NCCLGUARD_DUMP_DIR="$NG_TMP" timeout -k 5 60 "$SIMTEST" initall 4 >"$NG_TMP/out" 2>"$NG_TMP/err" ||
	{ cat "$NG_TMP/out" "$NG_TMP/err"; fail "simtest initall 4 under the shim: exit $?"; }
assert_grep "OK initall 4" "$NG_TMP/out"
# Colors 0,1,0 and no color for rank 3: halves of 2 (ranks 0, 2) and 1 (rank 1).
sed -n 's/.*comm [0-9a-f]*: \(rank [0-9]* of [0-9]* on device [0-9]*\) (split)$/\1/p' "$NG_TMP/err" |
	sort >"$NG_TMP/split"
printf 'rank 0 of 1 on device 1\nrank 0 of 2 on device 0\nrank 1 of 2 on device 2\n' |
	cmp -s - "$NG_TMP/split" || { cat "$NG_TMP/split"; fail "the grouped split's comms"; }
# Shrink without rank 0: 3 ranks on devices 1-3.
sed -n 's/.*comm [0-9a-f]*: \(rank [0-9]* of [0-9]* on device [0-9]*\) (shrink)$/\1/p' "$NG_TMP/err" |
	sort >"$NG_TMP/shrink"
printf 'rank 0 of 3 on device 1\nrank 1 of 3 on device 2\nrank 2 of 3 on device 3\n' |
	cmp -s - "$NG_TMP/shrink" || { cat "$NG_TMP/shrink"; fail "the grouped shrink's comms"; }
assert_no_grep "still initializing" "$NG_TMP/err"

# A job's split, from a comm NCCL runs nonblocking, is registered on both
# ranks and no init is reported as hung.  $1: a name, then environment
# settings, --, the job's options.
JOB="$NG_BUILD/tests/preload/job"
split_tracked() {
	name=$1; shift
	launch "$name" 2 LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=debug NCCLGUARD_INIT_TIMEOUT=1 \
		NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_DUMP_DIR="$NG_TMP" "$@" --sleep 2
	wait_ranks "$name" 2 30
	for r in 0 1; do
		[ "$(rc_of "$name" $r)" = 0 ] || { show_rank "$name" $r; fail "$name, rank $r: exit $(rc_of "$name" $r)"; }
		assert_grep "rank $r of 2 on device $r (split)" "$NG_TMP/$name.$r.err"
		assert_no_grep "still initializing" "$NG_TMP/$name.$r.err"
	done
}
# A split runs as its parent does: from a nonblocking parent with a config
# that says blocking, NCCL still returns before the comm is there.
split_tracked nbcfg -- "$JOB" "$NG_TMP/nbcfg.id" 2 --nonblocking --split-blocking-config
# NCCL_COMM_BLOCKING=0 makes every comm nonblocking whatever its config
# says (here: blocking): the split's comm comes later, and is still tracked.
split_tracked envnb NCCL_COMM_BLOCKING=0 -- "$JOB" "$NG_TMP/envnb.id" 2 --split
echo "PASS grouped_split"
