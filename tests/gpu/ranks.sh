#!/bin/bash
# ranks.sh N CMD...: N processes of CMD, as a launcher starts them (RANK,
# LOCAL_RANK, WORLD_SIZE set); with more ranks than GPUs, each one a host
# of its own to NCCL (fakehost.sh).  Exits with the status of the first
# rank that failed, 0 if none did.
n=$1
shift
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fh=
[ "$n" -gt "$ngpu" ] && fh="$(dirname "$0")/fakehost.sh"
pids=
for r in $(seq 0 $((n - 1))); do
	RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n $fh "$@" &
	pids="$pids $!"
done
rc=0
for p in $pids; do
	wait "$p"
	s=$?
	[ "$rc" = 0 ] && rc=$s
done
exit "$rc"
