# Sourced by tests/policy/test_*.sh: a fake host under $1 for the shim's
# host probe (NCCLGUARD_SYSROOT): 4 GPUs on two NUMA nodes (cpu 0 near
# GPUs 0-1, cpu 1 near GPUs 2-3: this machine's cpus, so that affinity is
# observable), NICs eth0 and ib0 up, ib1 down, one active and one down
# InfiniBand port.
ng_fake_host() {
	_r=$1
	_gpu() {	# bus node cpus
		mkdir -p "$_r/proc/driver/nvidia/gpus/$1" "$_r/sys/bus/pci/devices/$1"
		echo "Model: NVIDIA H200" >"$_r/proc/driver/nvidia/gpus/$1/information"
		echo "$2" >"$_r/sys/bus/pci/devices/$1/numa_node"
		echo "$3" >"$_r/sys/bus/pci/devices/$1/local_cpulist"
	}
	_cpu0=0
	_cpu1=$(( $(nproc) > 1 ? 1 : 0 ))
	_gpu 0000:18:00.0 0 $_cpu0
	_gpu 0000:3b:00.0 0 $_cpu0
	_gpu 0000:86:00.0 1 $_cpu1
	_gpu 0000:af:00.0 1 $_cpu1
	for _n in lo:0x49 eth0:0x1043 ib0:0x1043 ib1:0x1003; do
		mkdir -p "$_r/sys/class/net/${_n%%:*}"
		echo "${_n#*:}" >"$_r/sys/class/net/${_n%%:*}/flags"
	done
	mkdir -p "$_r/sys/class/infiniband/mlx5_0/ports/1" "$_r/sys/class/infiniband/mlx5_1/ports/1"
	echo "4: ACTIVE" >"$_r/sys/class/infiniband/mlx5_0/ports/1/state"
	echo "1: DOWN" >"$_r/sys/class/infiniband/mlx5_1/ports/1/state"
}
