# A job that makes and drops communicators all along (a new group per
# step) stays watched: after 3100 comm lifetimes, more than the registry
# holds, a later comm at the same address (glibc gives a destroyed comm's
# memory to the next) reuses the record of one destroyed more than 5 s
# before, and its stuck all-reduce is reported.  Without the reuse the late
# comm went untracked, its hang unseen.
. "$NG_ROOT/tests/lib.sh"
export LD_LIBRARY_PATH="$NG_SIM"
# ASan's quarantine holds freed memory back: every comm would land at a new
# address, and those are untracked past 3,072 (README).
case "${NCCLGUARD_TEST_SANITIZE:-}" in
*address*) export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0" ;;
esac
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_TRACE=0 NCCLGUARD_TIMEOUT=1 NCCLGUARD_ON_TIMEOUT=warn \
	NCCLGUARD_DUMP_DIR="$NG_TMP" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
	timeout 60 "$NG_BUILD/tests/preload/churn" 3100 6 >"$NG_TMP/out" 2>"$NG_TMP/err" ||
	fail "churn failed: $(cat "$NG_TMP/err")"
assert_grep "churn: comm 3100 waited for" "$NG_TMP/out"
# The registry did fill up: the last of the 3100 went untracked for a
# while.  Only if they were made within the 5 s a destroyed comm's record
# is kept (a slow build, ASan under load, reuses records before it fills).
ms=$(sed -n 's/^churn: made in \([0-9]*\) ms$/\1/p' "$NG_TMP/out")
[ -n "$ms" ] || fail "churn did not say how long it took"
if [ "$ms" -lt 5000 ]; then
	assert_grep "more than 3072 communicators (those destroyed count until" "$NG_TMP/err"
else
	note "the comms took $ms ms, past the 5 s grace: the registry need not fill"
fi
assert_grep "allreduce seq 1 on comm [0-9a-f]* (1 ranks, 256 B) not complete after 1.0 s" "$NG_TMP/err"
