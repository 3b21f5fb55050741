#!/bin/sh
# The CPU backend finds a profiler plugin as the NCCL version it plays
# would (NCCLSIM_VERSION): 2.29 and later look for ncclProfiler_v6 first
# and fall back to v5, v4, v3 where the library lacks it; 2.28 starts at
# v5, 2.27 at v4; NCCLSIM_PROFILER_VERSION asks for one alone, and a
# library with none of them is said, the job going on without it.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"
OLD="$NG_BUILD/tests/sim/libprof-old.so"
NONE="$NG_BUILD/tests/sim/libprof-none.so"
[ -f "$OLD" ] && [ -f "$NONE" ] || fail "test plugins not built"
export NCCL_DEBUG=INFO

# job TAG PLUGIN VERSION [ENV...]: two ranks of all-reduces.
job() {
	tag=$1 plugin=$2 version=$3; shift 3
	run_ok "$NG_TMP/$tag.log" env NCCL_PROFILER_PLUGIN="$plugin" NCCLSIM_VERSION="$version" "$@" \
		"$EXAMPLE" --launch 2 --iters 1 --warmup 0 --max-bytes 1K
}

note "NCCL 2.30, a plugin without v6: v5"
job v30 "$OLD" 23007
assert_eq "$(grep -c 'PROFILER/Plugin: Loaded prof_old (v5)$' "$NG_TMP/v30.log")" 2 "v5 loaded"
assert_eq "$(grep -c 'prof_old: v5 init' "$NG_TMP/v30.log")" 2 "v5 init per rank"

note "NCCL 2.28: v5; NCCL 2.27: v4"
job v28 "$OLD" 22809
assert_eq "$(grep -c 'Loaded prof_old (v5)$' "$NG_TMP/v28.log")" 2 "2.28: v5"
job v27 "$OLD" 22703
assert_eq "$(grep -c 'Loaded prof_old (v4)$' "$NG_TMP/v27.log")" 2 "2.27: v4"
assert_eq "$(grep -c 'prof_old: v4 init' "$NG_TMP/v27.log")" 2 "v4 init per rank"

note "NCCLSIM_PROFILER_VERSION=6 asks for v6 alone: not there, said"
job forced "$OLD" 23007 NCCLSIM_PROFILER_VERSION=6
assert_grep "ncclsim: .*libprof-old.so has no ncclProfiler_v6$" "$NG_TMP/forced.log"
assert_no_grep "prof_old: v" "$NG_TMP/forced.log"

note "a library with no profiler: said, the job goes on"
job none "$NONE" 23007
assert_grep "ncclsim: .*libprof-none.so has no ncclProfiler_v6..v3$" "$NG_TMP/none.log"
assert_no_grep "PROFILER/Plugin: Loaded" "$NG_TMP/none.log"
echo "PASS profiler_load"
