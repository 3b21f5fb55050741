#!/bin/bash
# The policy on a real GPU host with real NCCL (run by hand, on the device
# machine): GPU -> PCI bus id -> NUMA node from /proc/driver/nvidia and
# sysfs, cudaSetDevice(LOCAL_RANK) remapped under the pin, and NCCL loading
# the shim as its env plugin (NCCL >= 2.28.7): values from NCCL_CONF_FILE
# that the policy forbids reach NCCL without the plugin, not with it.
set -u
cd "$(dirname "$0")/../.."
. tests/gpu/env.sh
OUT=${OUT:-/tmp/ngout}; mkdir -p "$OUT"
B=build-gpu
nvidia-smi -L; nvidia-smi topo -m | head -4
python3 -c 'import torch; print("nccl", torch.cuda.nccl.version())'
make -j16 $NG_MAKEFLAGS BUILD=$B $B/lib/libncclguard.so $B/tests/policy/envprobe \
	>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
make -j16 $NG_MAKEFLAGS BUILD=$B $B/bin/ncclguard >>"$OUT/build.log" 2>&1 || tail -5 "$OUT/build.log"
IF=$(for i in /sys/class/net/*; do n=${i##*/}; [ "$n" != lo ] && grep -q up "$i/operstate" 2>/dev/null && echo "$n" && break; done)
echo "interface: $IF"
T=$(mktemp -d); chmod 700 "$T"
cat >"$T/p.conf" <<CONF
[env]
NCCL_SOCKET_IFNAME = enforce =$IF
NCCL_CUMEM_ENABLE = forbid
NCCL_P2P_DISABLE = forbid
NCCL_SHM_DISABLE = forbid
NCCL_IGNORE_CPU_AFFINITY = forbid
NCCL_DEBUG = allow
[network]
require_up = yes
[devices]
pin = local_rank
gpus = 1,0
numa = yes
CONF
chmod 600 "$T/p.conf"
printf 'NCCL_CUMEM_ENABLE=0\nNCCL_P2P_DISABLE=1\nNCCL_SHM_DISABLE=1\nNCCL_IGNORE_CPU_AFFINITY=1\n' >"$T/nccl.conf"
echo "== policy check"; [ -x $B/bin/ncclguard ] && $B/bin/ncclguard policy check "$T/p.conf" --local-ranks 2
CUDART=$(python3 -c 'import nvidia.cuda_runtime as c, os; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH="$NCCL_LIBDIR:${CUDART:-}:$CUDA_HOME/lib64"
probe() {	# name, extra env
	n=$1; shift
	rm -f "$T/id"
	env RANK=0 WORLD_SIZE=1 LOCAL_RANK=1 NCCLGUARD_POLICY="$T/p.conf" NCCL_CONF_FILE="$T/nccl.conf" \
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET "$@" LD_PRELOAD=$PWD/$B/lib/libncclguard.so \
		$B/tests/policy/envprobe --id "$T/id" --mutate NCCL_SOCKET_IFNAME NCCL_P2P_DISABLE \
		CUDA_VISIBLE_DEVICES >"$OUT/$n.out" 2>&1
	echo "== $n: exit $?"
	grep -iE "^(main|init|plugin|affinity|cudaSetDevice)|env plugin|ENV/Plugin|set by environment|NCCL_SOCKET_IFNAME set|Bootstrap.*Using|version|policy" "$OUT/$n.out" | head -40
}
probe with_plugin
probe without_plugin NCCL_ENV_PLUGIN=none
