#!/bin/sh
# The training run of `make pgo` (preload/module.mk): the no-op NCCL loop
# of BUILD through the instrumented shim SHIM, without a session and then
# recording under `ncclguard run`; the counts land where the build asked
# gcc to put them.  A run that fails leaves that path built without
# feedback, never a failed build.
#
# Not hermetic, hence not part of `make`: the recorded run needs LTTng's
# session daemon (`ncclguard run` starts one if none is reachable, and it
# is left running: another job may have begun to use it meanwhile), and
# any session of yours that records all your processes records it too.
# Run it when no job of yours records on this host.
#
#   preload/pgo/train.sh BUILD SHIM
set -u
build=$(cd "${1:?usage: train.sh BUILD SHIM}" && pwd) || exit 1
shim=${2:?usage: train.sh BUILD SHIM}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$build/bench/null:$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 NCCLGUARD_LOG=quiet
export NCCLGUARD_TP_LIBRARY="$build/lib/libncclguard-tp.so"
unset NCCLGUARD_INJECT NCCLGUARD_DISABLE NCCLGUARD_TIMING NCCLGUARD_SAMPLE NCCLGUARD_CLOCK
# An empty policy: the host's /etc/ncclguard.conf must not shape the build.
: >"$tmp/empty.conf"
export NCCLGUARD_POLICY="$tmp/empty.conf"
loop="$build/bench/ab_loop_null 20 5000"
if ! env LD_PRELOAD="$shim" $loop >"$tmp/plain.log" 2>&1; then
	echo "pgo: the loop failed; the shim is built without profile feedback:" >&2
	tail -5 "$tmp/plain.log" >&2
	exit 0
fi
if ! NCCLGUARD_LIB="$shim" "$build/bin/ncclguard" run -o "$tmp/trace" -- $loop >"$tmp/rec.log" 2>&1 ||
	! grep -q "events lost" "$tmp/rec.log"; then
	echo "pgo: no recorded run (LTTng not usable?); recording's path is built without profile feedback:" >&2
	tail -3 "$tmp/rec.log" >&2
fi
grep "started .*lttng-sessiond" "$tmp/rec.log" | sed 's/^/pgo: left running: /' >&2
exit 0
