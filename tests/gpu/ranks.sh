#!/bin/bash
# ranks.sh N CMD...: N processes of CMD, as a launcher starts them (RANK,
# LOCAL_RANK, WORLD_SIZE set); with more ranks than GPUs, each one a host
# of its own to NCCL (fakehost.sh).  When a rank fails the others are
# stopped (they would wait for it in NCCL) and the script exits with that
# rank's status; 0 if none failed.
n=$1
shift
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ -n "${CUDA_VISIBLE_DEVICES+x}" ] && ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
fh=
[ "$n" -gt "$ngpu" ] && fh="$(dirname "$0")/fakehost.sh"
pids=
for r in $(seq 0 $((n - 1))); do
	RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n ${fh:+"$fh"} "$@" &
	pids="$pids $!"
done
rc=0
for _ in $pids; do
	wait -n
	s=$?
	if [ "$s" != 0 ] && [ "$rc" = 0 ]; then
		rc=$s
		kill $pids 2>/dev/null
	fi
done
exit "$rc"
