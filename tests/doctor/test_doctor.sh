#!/bin/sh
# `ncclguard doctor` on fake hosts (tests/doctor/fakehost.sh, with the fake
# NVML of tests/doctor/fakenvml.c): each host gives the statuses, values
# and fix lines expected of it, the exit status is 1 exactly when a check
# failed, and --json writes ncclguard-doctor/1.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/doctor/fakehost.sh"
[ -f "$NG_BUILD/tests/doctor/libnvidia-ml.so.1" ] || fail "the fake NVML is not built"
H="$NG_TMP/host"
O="$NG_TMP/out"

note "a healthy host: everything ok, exit 0"
dr_fake_host "$H" node-a
dr_doctor "$H" "$O" --json "$NG_TMP/%h.json"
cat "$O"
assert_eq "$(cat "$O.rc")" 0 "exit status"
assert_grep "^ncclguard doctor: node-a, " "$O"
for id in driver.module.nvidia driver.module.nvidia_peermem driver.version driver.log \
	gpu.pci gpu.count gpu.model gpu.persistence gpu.ecc gpu.pcie_link gpu.nvlink \
	gpu.processes gpu.clocks gpu.counters \
	topo.gpu_gpu topo.gpu_nic net.interfaces net.nccl_ifname net.mtu.eth0 net.mtu.ib0 \
	net.counters ib.port.mlx5_0:1 ib.port.mlx5_1:1 ib.mtu ib.counters \
	cuda.driver cuda.runtime cuda.compat \
	nccl.version nccl.path nccl.env clock.sync clock.offset lttng.shim policy.file; do
	dr_expect "$O" ok "$id"
done
dr_expect "$O" ok driver.version 570.86.15
dr_expect "$O" ok gpu.count "4 on PCIe, 4 in NVML"
dr_expect "$O" ok gpu.model "NVIDIA H200"
dr_expect "$O" ok gpu.pcie_link "Gen5 x16"
dr_expect "$O" ok gpu.nvlink "18 up"
dr_expect "$O" ok topo.gpu_gpu "NV18 - "
dr_expect "$O" ok topo.gpu_nic "PIX (2 GPUs), NODE (2 GPUs)"
dr_expect "$O" ok topo.gpu_nic "GPU2 (node 1): mlx5_1 PIX"
dr_expect "$O" ok net.nccl_ifname "ib0,ib1"
dr_expect "$O" ok ib.port.mlx5_0:1 "ACTIVE, 400 Gb/sec (4X NDR), mtu 4096"
dr_expect "$O" ok gpu.processes "none - no process holds a context on the 4 GPUs"
dr_expect "$O" ok gpu.clocks "default - the driver boosts and idles the clocks; SM 345 of 1980 MHz"
dr_expect "$O" ok gpu.counters "0 on 4 GPUs - read: volatile ECC, retired pages, remapped rows, PCIe replays, NVLink replay/recovery/CRC"
dr_expect "$O" ok ib.mtu "4096 - the active MTU of the 2 ACTIVE ports (ibv_query_port)"
dr_expect "$O" ok ib.counters "0 on 2 ports"
dr_expect "$O" ok net.counters "eth0: carrier_changes 1; ib0: carrier_changes 1; ib1: carrier_changes 1 - "
dr_expect "$O" ok cuda.compat "runtime 13.0, driver 13.0"
dr_expect "$O" ok clock.sync chronyd
assert_no_grep "fix:" "$O"
# Grouped by area, in the contract's order, each once.
assert_eq "$(grep -E '^[a-z]+$' "$O" | tr '\n' ' ')" \
	"driver gpu topo net ib cuda nccl clock lttng policy " "areas"

note "--json: ncclguard-doctor/1, %h the host name"
J="$NG_TMP/node-a.json"
[ -f "$J" ] || fail "--json $NG_TMP/%h.json wrote no $J"
python3 - "$J" <<'PY' || fail "the JSON file does not hold"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "ncclguard-doctor/1", d["schema"]
assert d["host"] == "node-a" and d["time"].endswith("Z")
ids = [c["id"] for c in d["checks"]]
assert len(ids) == len(set(ids)), "an id twice"
for c in d["checks"]:
    assert set(c) == {"id", "status", "value", "detail", "fix"}, c
    assert c["status"] in ("ok", "warn", "fail", "skip"), c
    assert isinstance(c["value"], str)
    assert c["status"] not in ("warn", "fail") or c["fix"], c
    assert c["id"].split(".")[0] in ("driver", "gpu", "topo", "net", "ib", "cuda",
                                     "nccl", "clock", "lttng", "policy"), c["id"]
print(len(ids), "checks")
PY

note "without NVML: every NVML check is skip, with the reason"
DR_NVML="$NG_TMP/none/libnvidia-ml.so.1" dr_doctor "$H" "$O"
cat "$O"
assert_eq "$(cat "$O.rc")" 0 "exit status"
for id in gpu.count gpu.model gpu.persistence gpu.ecc gpu.nvlink gpu.processes gpu.clocks \
	gpu.counters; do
	dr_expect "$O" skip "$id" "NVML not loadable"
done
dr_expect "$O" skip driver.version "570.86.15 - kernel module 570.86.15; the user-space version is unknown"
dr_expect "$O" ok gpu.pci 4
dr_expect "$O" ok gpu.pcie_link "Gen5 x16"		# from sysfs
dr_expect "$O" ok topo.gpu_gpu "NODE (2 pairs), SYS (4 pairs)"
dr_expect "$O" ok cuda.driver 13.0			# from libcuda

note "NVML present but the driver not loaded: skip, with NVML's reason"
echo "init 9" >"$H/nvml.conf"
dr_doctor "$H" "$O"
dr_expect "$O" skip gpu.count "nvmlInit failed: Driver Not Loaded"

note "nvidia_peermem missing on a host with RDMA NICs: warn, with the fix"
dr_fake_host "$H" node-b nomodule
dr_doctor "$H" "$O"
dr_expect "$O" WARN driver.module.nvidia_peermem "not loaded"
assert_eq "$(dr_fix_of "$O" driver.module.nvidia_peermem | cut -c1-25)" "modprobe nvidia_peermem (" "fix"
assert_eq "$(cat "$O.rc")" 0 "exit status (a warning)"

note "the kernel module's driver is not the user space's: fail, exit 1"
dr_fake_host "$H" node-c driver
dr_doctor "$H" "$O"
dr_expect "$O" FAIL driver.version "kernel 570.86.15, user space 570.124.06"
dr_fix_of "$O" driver.version >"$NG_TMP/fix"
assert_grep "reload the nvidia modules" "$NG_TMP/fix"
assert_eq "$(cat "$O.rc")" 1 "exit status"
assert_grep "1 failed" "$O"

note "no NIC on the NUMA node of GPUs 2 and 3: topo.gpu_nic warns"
dr_fake_host "$H" node-d numa
dr_doctor "$H" "$O"
dr_expect "$O" WARN topo.gpu_nic "SYS (2 GPUs)"
dr_expect "$O" WARN topo.gpu_nic "GPU3 (node 1): mlx5_0 SYS"
assert_grep "^GPU 2,3 have no RDMA NIC on their NUMA node" "$(dr_fix_of "$O" topo.gpu_nic >"$NG_TMP/fix"; echo "$NG_TMP/fix")"

note "a GPU's PCIe link trained narrow: gpu.pcie_link warns"
dr_fake_host "$H" node-e pcie
dr_doctor "$H" "$O"
dr_expect "$O" WARN gpu.pcie_link "1 of 4 GPUs narrower than x16 - GPU 2 (0000:88:00.0) x8 of x16"
dr_fix_of "$O" gpu.pcie_link | grep -q "^reseat the GPU" || fail "no fix for the PCIe link"
DR_NVML="$NG_TMP/none/libnvidia-ml.so.1" dr_doctor "$H" "$O"
dr_expect "$O" WARN gpu.pcie_link "x8 of x16"		# sysfs sees it too

note "an IB port down: its check warns, the others stay ok"
dr_fake_host "$H" node-f ibdown
dr_doctor "$H" "$O"
dr_expect "$O" WARN ib.port.mlx5_1:1 "DOWN"
dr_expect "$O" ok ib.port.mlx5_0:1 ACTIVE
dr_fix_of "$O" ib.port.mlx5_1:1 | grep -q "ibstat mlx5_1 1" || fail "no fix for the port"

note "no RDMA device: the nearest socket NIC (virtio), no peermem needed"
dr_fake_host "$H" node-j noib nomodule
dr_doctor "$H" "$O"
dr_expect "$O" WARN topo.gpu_nic "NODE (2 GPUs), SYS (2 GPUs) - GPU0 (node 0): eth0 NODE"
dr_expect "$O" ok driver.module.nvidia_peermem "not loaded - no RDMA device"
dr_expect "$O" skip ib.ports "no RDMA device"
dr_expect "$O" ok net.nccl_ifname eth0

note "an Xid in the kernel log: driver.log warns; no readable log: skip"
dr_fake_host "$H" node-g xid
dr_doctor "$H" "$O"
dr_expect "$O" WARN driver.log "Xid 79 (1) - NVRM: Xid (PCI:0000:88:00): 79"
rm "$H/dev/kmsg"
dr_doctor "$H" "$O"
dr_expect "$O" skip driver.log "the kernel log is not readable (/dev/kmsg: No such file"

note "a module, the clock: fail and warn"
dr_fake_host "$H" node-h
printf "ext4 1 0 - Live 0x0\n" >"$H/m" && mv "$H/m" "$H/proc/modules"
printf 'synced 0\noffset_us 50000\n' >"$H/proc/ncclguard_timex"
rm "$H/proc/100/comm"
dr_doctor "$H" "$O"
dr_expect "$O" FAIL driver.module.nvidia "not loaded"
dr_expect "$O" skip driver.module.nvidia_uvm "the nvidia module itself is not loaded"
dr_expect "$O" WARN clock.sync "not synchronised"
dr_expect "$O" WARN clock.offset "50000 us"
assert_eq "$(cat "$O.rc")" 1 "exit status"

note "NCCL_SOCKET_IFNAME naming nothing: net.nccl_ifname fails"
dr_fake_host "$H" node-i
rc=0
env NCCL_SOCKET_IFNAME==eth9 NCCLGUARD_SYSROOT="$H" LD_LIBRARY_PATH="$NG_SIM" \
	NCCLGUARD_NVML_LIBRARY="$NG_BUILD/tests/doctor/libnvidia-ml.so.1" \
	"$NG_BIN" doctor >"$O" 2>&1 || rc=$?
dr_expect "$O" FAIL net.nccl_ifname
assert_eq "$rc" 1 "exit status"

note "--policy: the interfaces and GPUs it requires"
cat >"$NG_TMP/site.conf" <<'CONF'
[env]
NCCL_SOCKET_IFNAME = enforce =ib9
[network]
require_up = yes
[devices]
gpus = 0,1,2,3,4,5,6,7
CONF
chmod 644 "$NG_TMP/site.conf"
dr_doctor "$H" "$O" --policy "$NG_TMP/site.conf"
cat "$O"
dr_expect "$O" ok policy.file "$NG_TMP/site.conf"
dr_expect "$O" FAIL policy.socket_ifname "none - NCCL_SOCKET_IFNAME==ib9: no interface named ib9"
dr_expect "$O" WARN policy.gpus "0,1,2,3,4,5,6,7 - GPU 4,5,6,7 not on this host"
assert_eq "$(cat "$O.rc")" 1 "exit status"
printf '[env]\nNCCL_SOCKET_IFNAME = enforce ib\n[network]\nrequire_up = yes\n[devices]\ngpus = 0,1\n' \
	>"$NG_TMP/good.conf"
dr_doctor "$H" "$O" --policy "$NG_TMP/good.conf"
dr_expect "$O" ok policy.socket_ifname "ib0,ib1"
dr_expect "$O" ok policy.gpus "0,1"
assert_eq "$(cat "$O.rc")" 0 "exit status"
printf '[env]\nNCCL_SOCKET_IFNAME enforce\n' >"$NG_TMP/broken.conf"
dr_doctor "$H" "$O" --policy "$NG_TMP/broken.conf"
dr_expect "$O" FAIL policy.file "broken.conf:2"

note "processes holding GPUs: warn with pid, command, memory; a pid from another namespace said so"
dr_fake_host "$H" node-k procs
dr_doctor "$H" "$O"
dr_expect "$O" WARN gpu.processes "GPU 1: pid 4242 python 38.4 GiB, GPU 3: pid 77 (another pid namespace) 1.0 GiB - "
dr_expect "$O" WARN gpu.processes "pid 77 not in this host's /proc: NVML sees another pid namespace"
dr_fix_of "$O" gpu.processes | grep -q "^list them with nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv on the host itself" ||
	fail "no fix for the processes"
assert_eq "$(cat "$O.rc")" 0 "exit status (a warning)"
# A graphics context counts too, and a process with both is listed once.
echo "gpu.1.gprocs 4242:0,5151:1048576" >>"$H/nvml.conf"
dr_doctor "$H" "$O"
dr_expect "$O" WARN gpu.processes "GPU 1: pid 4242 python 38.4 GiB, GPU 1: pid 5151 (another pid namespace) 1 MiB, GPU 3: "

note "GPU clocks: locked on some GPUs warns; locked on all is one value"
dr_fake_host "$H" node-l clocks
dr_doctor "$H" "$O"
dr_expect "$O" WARN gpu.clocks "locked: GPU 0,1; default: GPU 2,3 - GPUs of one host run at different clocks"
dr_fix_of "$O" gpu.clocks | grep -q "nvidia-smi -rgc" || fail "no fix for the clocks"
dr_fake_host "$H" node-l lockall
dr_doctor "$H" "$O"
dr_expect "$O" ok gpu.clocks "locked - set by the user on every GPU"
# Applications clocks off their default: another value.
sed -i 's|^gpu\.\([0-9]\)\.appclk .*|gpu.\1.appclk 1410/1980|' "$H/nvml.conf"
dr_doctor "$H" "$O"
dr_expect "$O" ok gpu.clocks "applications 1410 MHz - "

note "the counters: nonzero warns, a saturated IB counter is said to be"
dr_fake_host "$H" node-m counters
dr_doctor "$H" "$O"
dr_expect "$O" WARN gpu.counters "GPU 2: ecc.corrected 3, pcie.replay 12, nvlink5.crc 7 - read: "
dr_expect "$O" WARN ib.counters "mlx5_1:1: link_downed 255 (saturated), symbol_error 12 - mlx5_1:1 link_downed saturated, changes no longer visible"
dr_expect "$O" WARN net.counters "eth0: carrier_changes 9, rx_errors 5; ib0: carrier_changes 1"
assert_eq "$(cat "$O.rc")" 0 "exit status (warnings)"
# A 4-bit counter at 15 is saturated too; a port down is part of the baseline.
dr_fake_host "$H" node-m ibdown
echo 15 >"$H/sys/class/infiniband/mlx5_0/ports/1/counters/local_link_integrity_errors"
dr_doctor "$H" "$O"
dr_expect "$O" WARN ib.counters "mlx5_0:1: local_link_integrity_errors 15 (saturated); mlx5_1:1 DOWN - "
dr_fake_host "$H" node-m noib
dr_doctor "$H" "$O"
dr_expect "$O" skip ib.counters "no RDMA device"
dr_expect "$O" ok net.counters "eth0: carrier_changes 1 - "

note "ib.mtu through libibverbs: ports that differ warn; no libibverbs: skip"
dr_fake_host "$H" node-n ibmtu
dr_doctor "$H" "$O"
dr_expect "$O" WARN ib.mtu "4096: mlx5_0:1; 2048: mlx5_1:1 - NCCL's IB transport uses each port's active MTU"
dr_fix_of "$O" ib.mtu | grep -q "^give every port one MTU" || fail "no fix for ib.mtu"
# Only ACTIVE ports count.
dr_fake_host "$H" node-n ibmtu ibdown
dr_doctor "$H" "$O"
dr_expect "$O" ok ib.mtu "4096 - the active MTU of the 1 ACTIVE port"
DR_VERBS="$NG_TMP/none/libibverbs.so.1" dr_doctor "$H" "$O"
dr_expect "$O" skip ib.mtu "libibverbs not loadable ("
dr_expect "$O" skip ib.mtu "NCCL cannot use the RDMA devices either"
dr_fake_host "$H" node-n noib
dr_doctor "$H" "$O"
dr_expect "$O" skip ib.mtu "libibverbs lists no RDMA device"

note "--json refuses to replace what is not a regular file"
ln -s "$NG_TMP/elsewhere" "$NG_TMP/link.json"
dr_doctor "$H" "$O" --json "$NG_TMP/link.json"
assert_eq "$(cat "$O.rc")" 2 "exit status"
assert_grep "not a regular file" "$O.err"
[ ! -e "$NG_TMP/elsewhere" ] || fail "the link was followed"
echo ok
