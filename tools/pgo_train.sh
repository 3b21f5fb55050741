#!/bin/sh
# The training run of the shim's profile-feedback build (preload/module.mk):
# the no-op NCCL loop of BUILD through the instrumented shim SHIM, without a
# session and then recording; the counts land where the build asked gcc to
# put them.  A run that fails leaves that path built without feedback,
# never a failed build.
#
#   tools/pgo_train.sh BUILD SHIM
set -u
build=$(cd "${1:?usage: pgo_train.sh BUILD SHIM}" && pwd) || exit 1
shim=${2:?usage: pgo_train.sh BUILD SHIM}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$build/bench/null:$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 NCCLGUARD_LOG=quiet
export NCCLGUARD_TP_LIBRARY="$build/lib/libncclguard-tp.so"
loop="$build/bench/ab_loop_null 20 5000"
if ! env LD_PRELOAD="$shim" $loop >"$tmp/plain.log" 2>&1; then
	echo "pgo_train: the loop failed; the shim is built without profile feedback:" >&2
	tail -5 "$tmp/plain.log" >&2
	exit 0
fi
# Recording needs LTTng's session daemon: ncclguard run starts one if none
# is reachable, and says so; a build leaves behind none it started (the
# daemons of our user that were not there before the run).
sessiond() {
	for p in /proc/[0-9]*; do
		[ -O "$p" ] && [ "$(cat "$p/comm" 2>/dev/null)" = lttng-sessiond ] && echo "${p#/proc/}"
	done | sort
}
sessiond >"$tmp/before"
if ! NCCLGUARD_LIB="$shim" "$build/bin/ncclguard" run -o "$tmp/trace" -- $loop >"$tmp/rec.log" 2>&1 ||
	! grep -q "events lost" "$tmp/rec.log"; then
	echo "pgo_train: no recorded run (LTTng not usable?); recording's path is built without profile feedback:" >&2
	tail -3 "$tmp/rec.log" >&2
fi
if grep -q "started .*lttng-sessiond" "$tmp/rec.log"; then
	for pid in $(sessiond | comm -13 "$tmp/before" -); do
		kill "$pid" 2>/dev/null
	done
fi
exit 0
