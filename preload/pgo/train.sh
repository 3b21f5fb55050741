#!/bin/sh
# The training run of the shim's profile-feedback build (preload/module.mk):
# the no-op NCCL loop of BUILD through the instrumented shim SHIM, without
# a provider and then with the stub provider TP (every event enabled, none
# written: the recording path without a session).  The counts land where
# the build asked gcc to put them.  Hermetic: no session, no daemon, no
# trace; a run that fails leaves that path built without feedback, never
# a failed build.
#
#   preload/pgo/train.sh BUILD SHIM TP
set -u
build=$(cd "${1:?usage: train.sh BUILD SHIM TP}" && pwd) || exit 1
shim=${2:?usage: train.sh BUILD SHIM TP}
tp=${3:?usage: train.sh BUILD SHIM TP}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$build/bench/null:$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 NCCLGUARD_LOG=quiet
unset NCCLGUARD_INJECT NCCLGUARD_DISABLE NCCLGUARD_TIMING NCCLGUARD_SAMPLE NCCLGUARD_CLOCK
# An empty policy: the host's /etc/ncclguard.conf must not shape the build.
: >"$tmp/empty.conf"
export NCCLGUARD_POLICY="$tmp/empty.conf"
loop="$build/bench/ab_loop_null 20 5000"
for mode in plain recording; do
	if [ $mode = plain ]; then
		set -- env NCCLGUARD_TRACE=0
	else
		set -- env NCCLGUARD_TP_LIBRARY="$tp"
	fi
	if ! "$@" LD_PRELOAD="$shim" $loop >"$tmp/$mode.log" 2>&1; then
		echo "pgo: the $mode loop failed; that path is built without profile feedback:" >&2
		tail -5 "$tmp/$mode.log" >&2
	fi
done
exit 0
