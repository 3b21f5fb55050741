# Sourced by tests/doctor/test_*.sh: dr_fake_host ROOT NAME [VARIANT...]
# lays out a GPU host under ROOT for `ncclguard doctor` (NCCLGUARD_SYSROOT)
# and its NVML answers in ROOT/nvml.conf (tests/doctor/fakenvml.c):
#
#   node 0  pci0000:17  switch: GPU0 0000:1a:00.0 + mlx5_0 0000:1b:00.0 (ib0)
#           pci0000:3a  GPU1 0000:3b:00.0
#           pci0000:00  eth0 0000:01:00.0
#   node 1  pci0000:85  switch: GPU2 0000:88:00.0 + mlx5_1 0000:89:00.0 (ib1)
#           pci0000:ae  GPU3 0000:af:00.0
#
# four H200s, 18 NVLinks each to NVSwitches, driver 570.86.15, CUDA 13.0,
# clock synchronised by chronyd.  Variants break one thing each:
#   nomodule   nvidia_peermem not loaded
#   driver     the user-space driver is 570.124.06, the kernel's 570.86.15
#   numa       no mlx5_1: GPUs 2 and 3 have no NIC on their NUMA node
#   pcie       GPU 2's link trained at x8 of x16
#   ibdown     mlx5_1 port 1 down
#   xid        an Xid 79 in the kernel log
#   mtu9000    eth0's MTU is 9000
#   noib       no RDMA device: eth0 (a virtio NIC) is the only one
#   procs      GPU 1 held by pid 4242 (python), GPU 3 by pid 77, which
#              this host's /proc lacks (another pid namespace)
#   clocks     GPUs 0 and 1 locked (nvidia-smi -lgc), 2 and 3 not
#   lockall    every GPU locked
#   counters   GPU 2: 3 corrected ECC errors, 12 PCIe replays, 7 CRC
#              errors on NVLink 5; mlx5_1 port 1: link_downed saturated
#              (255), 12 symbol errors; eth0: 5 rx errors, 9 carrier changes
#   ibmtu      mlx5_1 port 1's active MTU (libibverbs) is 2048
# The RDMA ports' active MTU through libibverbs is in ROOT/verbs.conf
# (tests/doctor/fakeverbs.c).
ng_has() { case " $_variants " in *" $1 "*) return 0 ;; esac; return 1; }

dr_fake_host() {
	_r=$1 _name=$2
	shift 2
	_variants="$*"
	rm -rf "$_r"
	mkdir -p "$_r/proc/sys/kernel" "$_r/proc/driver/nvidia/gpus" "$_r/sys/bus/pci/devices" \
		"$_r/sys/class/net" "$_r/sys/class/infiniband" "$_r/dev" "$_r/proc/100"
	echo "$_name" >"$_r/proc/sys/kernel/hostname"

	# _pci PATH NODE VENDOR CLASS: a PCI device at sys/devices/PATH.
	_pci() {
		_d="$_r/sys/devices/$1"
		_b=${1##*/}
		mkdir -p "$_d"
		echo "$2" >"$_d/numa_node"
		echo "$3" >"$_d/vendor"
		echo "$4" >"$_d/class"
		ln -s "../../../devices/$1" "$_r/sys/bus/pci/devices/$_b"
	}
	_gpu() {	# PATH NODE WIDTH
		_pci "$1" "$2" 0x10de 0x030200
		_b=${1##*/}
		mkdir -p "$_r/proc/driver/nvidia/gpus/$_b"
		echo 0 >"$_r/sys/devices/$1/local_cpulist"
		echo "32.0 GT/s PCIe" >"$_r/sys/devices/$1/current_link_speed"
		echo "32.0 GT/s PCIe" >"$_r/sys/devices/$1/max_link_speed"
		echo "$3" >"$_r/sys/devices/$1/current_link_width"
		echo 16 >"$_r/sys/devices/$1/max_link_width"
	}
	_netdev() {	# NAME FLAGS MTU [PCIPATH]
		mkdir -p "$_r/sys/class/net/$1"
		echo "$2" >"$_r/sys/class/net/$1/flags"
		echo "$3" >"$_r/sys/class/net/$1/mtu"
		[ -n "${4:-}" ] && ln -s "../../../devices/$4" "$_r/sys/class/net/$1/device"
		mkdir -p "$_r/sys/class/net/$1/statistics"
		echo 1 >"$_r/sys/class/net/$1/carrier_changes"
		for _c in rx_errors tx_errors rx_dropped tx_dropped; do
			echo 0 >"$_r/sys/class/net/$1/statistics/$_c"
		done
		return 0
	}
	_hca() {	# NAME PCIPATH STATE PHYS NETDEV
		_p="$_r/sys/class/infiniband/$1/ports/1"
		mkdir -p "$_p"
		ln -s "../../../devices/$2" "$_r/sys/class/infiniband/$1/device"
		echo "$3" >"$_p/state"
		echo "$4" >"$_p/phys_state"
		echo "400 Gb/sec (4X NDR)" >"$_p/rate"
		echo InfiniBand >"$_p/link_layer"
		echo 4096 >"$_p/active_mtu"
		_netdev "$5" 0x1043 4092 "$2"
		mkdir -p "$_p/counters"
		for _c in link_downed link_error_recovery symbol_error port_rcv_errors \
			port_xmit_discards local_link_integrity_errors excessive_buffer_overrun_errors; do
			echo 0 >"$_p/counters/$_c"
		done
		_vm=4096
		ng_has ibmtu && [ "$1" = mlx5_1 ] && _vm=2048
		echo "$1 1 $_vm" >>"$_r/verbs.conf"
	}

	_w2=16
	ng_has pcie && _w2=8
	_gpu pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0 0 16
	_gpu pci0000:3a/0000:3a:01.0/0000:3b:00.0 0 16
	_gpu pci0000:85/0000:85:01.0/0000:86:00.0/0000:87:00.0/0000:88:00.0 1 $_w2
	_gpu pci0000:ae/0000:ae:01.0/0000:af:00.0 1 16
	_pci pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0 0 0x15b3 0x020700
	_pci pci0000:00/0000:00:1c.0/0000:01:00.0 0 0x8086 0x020000
	ng_has noib || _hca mlx5_0 pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0 \
		"4: ACTIVE" "5: LinkUp" ib0
	if ! ng_has numa && ! ng_has noib; then
		_pci pci0000:85/0000:85:01.0/0000:86:00.0/0000:87:01.0/0000:89:00.0 1 0x15b3 0x020700
		if ng_has ibdown; then
			_hca mlx5_1 pci0000:85/0000:85:01.0/0000:86:00.0/0000:87:01.0/0000:89:00.0 \
				"1: DOWN" "3: Disabled" ib1
		else
			_hca mlx5_1 pci0000:85/0000:85:01.0/0000:86:00.0/0000:87:01.0/0000:89:00.0 \
				"4: ACTIVE" "5: LinkUp" ib1
		fi
	fi
	_mtu=1500
	ng_has mtu9000 && _mtu=9000
	_netdev lo 0x49 65536
	mkdir -p "$_r/sys/devices/pci0000:00/0000:00:1c.0/0000:01:00.0/virtio2"
	_netdev eth0 0x1043 $_mtu pci0000:00/0000:00:1c.0/0000:01:00.0/virtio2
	if ng_has counters; then
		echo 9 >"$_r/sys/class/net/eth0/carrier_changes"
		echo 5 >"$_r/sys/class/net/eth0/statistics/rx_errors"
		if [ -d "$_r/sys/class/infiniband/mlx5_1" ]; then
			echo 255 >"$_r/sys/class/infiniband/mlx5_1/ports/1/counters/link_downed"
			echo 12 >"$_r/sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error"
		fi
	fi

	for _m in nvidia_uvm nvidia_drm nvidia_modeset nvidia_peermem nvidia; do
		[ $_m = nvidia_peermem ] && ng_has nomodule && continue
		echo "$_m 1234567 0 - Live 0x0000000000000000"
	done >"$_r/proc/modules"
	printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)  Thu Jan 23 2025\nGCC version:  gcc version 12.2.0\n' \
		>"$_r/proc/driver/nvidia/version"
	{
		echo "6,1000,5000000,-;nvidia-nvlink: Nvlink Core is being initialized"
		echo " SUBSYSTEM=pci"
		echo "6,1001,5000100,-;NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.86.15"
		ng_has xid && echo "3,1002,9000000,-;NVRM: Xid (PCI:0000:88:00): 79, pid=1234, name=python, GPU has fallen off the bus."
	} >"$_r/dev/kmsg"
	printf 'synced 1\noffset_us 12\nmaxerror_us 500\n' >"$_r/proc/ncclguard_timex"
	echo chronyd >"$_r/proc/100/comm"

	_drv=570.86.15
	ng_has driver && _drv=570.124.06
	{
		echo "init 0"
		echo "driver $_drv"
		echo "cuda 13000"
		_i=0
		for _b in 0000:1a:00.0 0000:3b:00.0 0000:88:00.0 0000:af:00.0; do
			_w=16
			[ $_i = 2 ] && _w=$_w2
			echo "gpu.$_i.busid $_b"
			echo "gpu.$_i.name NVIDIA H200"
			echo "gpu.$_i.persistence 1"
			echo "gpu.$_i.ecc 0"
			echo "gpu.$_i.gen 1/5"
			echo "gpu.$_i.width $_w/16"
			echo "gpu.$_i.links 18/18"
			echo "gpu.$_i.remote switch"
			_lock=
			ng_has lockall && _lock=1
			ng_has clocks && [ $_i -lt 2 ] && _lock=1
			[ -n "$_lock" ] && echo "gpu.$_i.throttle 0x2"
			echo "gpu.$_i.appclk 1980/1980"
			echo "gpu.$_i.smclk 345/1980"
			echo "gpu.$_i.ecc_corr 0"
			echo "gpu.$_i.remap 0/0/0/0"
			_i=$((_i + 1))
		done
		if ng_has procs; then
			echo "gpu.1.procs 4242:41231686041"
			echo "gpu.3.procs 77:1073741824"
			mkdir -p "$_r/proc/4242"
			echo python >"$_r/proc/4242/comm"
		fi
		if ng_has counters; then
			echo "gpu.2.ecc_corr 3"
			echo "gpu.2.replays 12"
			echo "gpu.2.nvl.5.crc 7"
		fi
	} >"$_r/nvml.conf"
}

# dr_doctor ROOT OUT [args...]: doctor on the fake host; output in OUT,
# exit status in OUT.rc.
dr_doctor() {
	_root=$1 _out=$2
	shift 2
	_rc=0
	env -u NCCLGUARD_POLICY -u NCCL_SOCKET_IFNAME -u NCCL_IB_HCA \
		NCCLGUARD_SYSROOT="$_root" LD_LIBRARY_PATH="$NG_SIM" \
		NCCLGUARD_NVML_LIBRARY="${DR_NVML:-$NG_BUILD/tests/doctor/libnvidia-ml.so.1}" \
		NCCLGUARD_IBVERBS_LIBRARY="${DR_VERBS:-$NG_BUILD/tests/doctor/libibverbs.so.1}" \
		"$NG_BIN" doctor "$@" >"$_out" 2>"$_out.err" || _rc=$?
	echo $_rc >"$_out.rc"
}

# dr_expect OUT STATUS ID [TEXT]: the line of check ID has STATUS (ok,
# WARN, FAIL, skip) and TEXT.
dr_expect() {
	_line=$(grep -E "^  [a-zA-Z]+ +$3 " "$1" | head -1)
	[ -n "$_line" ] || { cat "$1"; fail "$3: no such check in $1"; }
	case "$_line" in
	"  $2 "*) ;;
	*) cat "$1"; fail "$3: expected $2, got: $_line" ;;
	esac
	[ -z "${4:-}" ] || case "$_line" in
	*"$4"*) ;;
	*) cat "$1"; fail "$3: '$4' not in: $_line" ;;
	esac
}

# dr_fix_of OUT ID: the fix line that follows check ID.
dr_fix_of() {
	awk -v id="$2" '$2 == id { getline; if ($1 == "fix:") { sub(/^ *fix: /, ""); print } }' "$1"
}
