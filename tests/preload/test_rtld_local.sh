# NCCL loaded as PyTorch loads it (a dependency of a module opened
# RTLD_LOCAL): the shim still finds it through dlopen(NOLOAD), sees the
# calls, and the results are those without the shim.
. "$NG_ROOT/tests/lib.sh"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0
DRV="$NG_BUILD/tests/preload/ext_driver"
MOD="$NG_BUILD/tests/preload/libext_module.so"

job() {	# job TAG [env...]: two ranks, their outputs in $NG_TMP/TAG.*
	tag=$1; shift
	pids=""
	for r in 0 1; do
		env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r "$@" "$DRV" "$MOD" "$NG_TMP/$tag.id" 5 \
			>"$NG_TMP/$tag.$r.out" 2>"$NG_TMP/$tag.$r.err" &
		pids="$pids $!"
	done
	r=0
	for p in $pids; do
		wait "$p" || fail "$tag rank $r failed: $(cat "$NG_TMP/$tag.$r.err")"
		r=$((r + 1))
	done
}

job plain
job shim LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=debug
for r in 0 1; do
	assert_grep "sum ok" "$NG_TMP/plain.$r.out"
	assert_grep "sum ok" "$NG_TMP/shim.$r.out"
	# The shim resolved the local-scope NCCL and saw the communicator.
	assert_grep "from .*/sim/libnccl.so.2" "$NG_TMP/shim.$r.err"
	assert_grep "rank $r of 2" "$NG_TMP/shim.$r.err"
done
