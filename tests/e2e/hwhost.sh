# Sourced by the hardware-evidence tests: hw_fake_host ROOT [NGPUS [LINKS]] lays
# out, for the sampler (NCCLGUARD_SYSROOT, NCCLGUARD_NVML_LIBRARY=the
# fake NVML), a host with the CPU backend's first NGPUS GPUs (default 2;
# GPU i is 0000:1i:00.0, as sim/ numbers them), each behind a root port
# of its own with an InfiniBand NIC beside it (mlx5_i, its port 1), LINKS
# NVLinks each (default 4), and an Ethernet NIC (eth0) on another root complex.
# hw_set ROOT FILE VALUE changes a sysfs counter; hw_nvml ROOT KEY VALUE
# an NVML answer (tests/doctor/fakenvml.c reads its file again).
hw_fake_host() {
	_r=$1 _n=${2:-2} _links=${3:-4}
	rm -rf "$_r"
	mkdir -p "$_r/sys/bus/pci/devices" "$_r/sys/class/infiniband" "$_r/sys/class/net"
	_pci() {	# PATH NODE VENDOR CLASS
		mkdir -p "$_r/sys/devices/$1"
		echo "$2" >"$_r/sys/devices/$1/numa_node"
		echo "$3" >"$_r/sys/devices/$1/vendor"
		echo "$4" >"$_r/sys/devices/$1/class"
		ln -s "../../../devices/$1" "$_r/sys/bus/pci/devices/${1##*/}"
	}
	_hca() {	# NAME PCIPATH
		_p="$_r/sys/class/infiniband/$1/ports/1"
		mkdir -p "$_p/counters"
		ln -s "../../../devices/$2" "$_r/sys/class/infiniband/$1/device"
		echo "4: ACTIVE" >"$_p/state"
		for _c in link_downed link_error_recovery symbol_error port_rcv_errors \
			  port_xmit_discards local_link_integrity_errors excessive_buffer_overrun_errors; do
			echo 0 >"$_p/counters/$_c"
		done
	}
	_i=0
	while [ $_i -lt "$_n" ]; do
		_rc=$(printf '%02x' $((0x30 * (_i + 1))))
		_pci "pci0000:$_rc/0000:$_rc:01.0/0000:1$_i:00.0" $((_i / 2)) 0x10de 0x030200
		_pci "pci0000:$_rc/0000:$_rc:02.0/0000:2$_i:00.0" $((_i / 2)) 0x15b3 0x020700
		_hca "mlx5_$_i" "pci0000:$_rc/0000:$_rc:02.0/0000:2$_i:00.0"
		_i=$((_i + 1))
	done
	_pci pci0000:00/0000:00:1c.0/0000:01:00.0 0 0x8086 0x020000
	mkdir -p "$_r/sys/class/net/eth0/statistics"
	ln -s "../../../devices/pci0000:00/0000:00:1c.0/0000:01:00.0" "$_r/sys/class/net/eth0/device"
	echo 1 >"$_r/sys/class/net/eth0/carrier"
	echo 1 >"$_r/sys/class/net/eth0/type"
	echo 2 >"$_r/sys/class/net/eth0/carrier_changes"
	for _c in rx_errors tx_errors rx_dropped tx_dropped; do
		echo 0 >"$_r/sys/class/net/eth0/statistics/$_c"
	done
	{
		echo "init 0"
		echo "driver 570.86.15"
		echo "cuda 13000"
		_i=0
		while [ $_i -lt "$_n" ]; do
			echo "gpu.$_i.busid 0000:1$_i:00.0"
			echo "gpu.$_i.name NVIDIA H200"
			echo "gpu.$_i.gen 5/5"
			echo "gpu.$_i.width 16/16"
			echo "gpu.$_i.links $_links/$_links"
			echo "gpu.$_i.temp 40"
			echo "gpu.$_i.power 300"
			_i=$((_i + 1))
		done
	} >"$_r/nvml.conf"
}

# hw_set ROOT PATH VALUE: a sysfs file of the fake host, rewritten in
# place as sysfs changes (the sampler holds it open).
hw_set() {
	echo "$3" >"$1/$2"
}

# hw_nvml ROOT KEY VALUE: one NVML answer, changed (or added).
hw_nvml() {
	{ grep -v "^$2 " "$1/nvml.conf"; echo "$2 $3"; } >"$1/nvml.conf.new" &&
		mv "$1/nvml.conf.new" "$1/nvml.conf"
}
