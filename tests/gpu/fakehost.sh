#!/bin/sh
# Runs a rank as a host of its own, to NCCL: NCCL refuses two ranks of one
# host on one GPU ("Duplicate GPU detected"), but ranks whose NCCL_HOSTID
# differ are on different hosts to it, joined by its socket transport.
# So one GPU runs a real 2-rank communicator, and ncclguard sees what it
# sees across nodes: the network path, NCCL's profiler events.  Ranks
# share the GPU by time slices: slow, never a figure of speed.
#   torchrun --nproc_per_node=2 --no-python tests/gpu/fakehost.sh python3 x.py
export NCCL_HOSTID="ngfake-${LOCAL_RANK:-${RANK:-0}}"
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
exec "$@"
