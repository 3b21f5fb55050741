#!/bin/sh
# Each of 4 ranks on the CPU backend sees the enforced values at init, even
# though it started with other values and changed them itself after start;
# pinned to gpus[LOCAL_RANK] with cudaSetDevice(LOCAL_RANK) landing on
# device 0, CPU affinity from the GPU's NUMA node, and the env plugin
# serving the policy after the program changed its environment again.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/policy/fakehost.sh"
PROBE="$NG_BUILD/tests/policy/envprobe"
[ -x "$PROBE" ] || fail "no $PROBE (make $PROBE)"
[ -e "$NG_SIM/libnccl.so.2" ] || fail "no CPU backend in $NG_SIM"

ng_fake_host "$NG_TMP/host"
mkdir -m 700 "$NG_TMP/etc"
POL="$NG_TMP/etc/ncclguard.conf"
cat >"$POL" <<'CONF'
[env]
NCCL_SOCKET_IFNAME = enforce =ib0
NCCL_P2P_DISABLE   = forbid
NCCL_IB_DISABLE    = default 1
NCCL_DEBUG         = allow
[network]
require_up = yes
deny = eth0
[devices]
pin = local_rank
gpus = 3,2,1,0
numa = yes
[timeouts]
init = 60
[violation]
action = fail
CONF
chmod 600 "$POL"

VARS="NCCL_SOCKET_IFNAME NCCL_P2P_DISABLE NCCL_IB_DISABLE NCCL_DEBUG CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER"
note "4 ranks, user values that the policy overrides, changed again after start"
for r in 0 1 2 3; do
	env RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 LOCAL_WORLD_SIZE=4 NCCLGUARD_LOG=verbose \
		NCCLGUARD_POLICY="$POL" NCCLGUARD_SYSROOT="$NG_TMP/host" \
		NCCL_SOCKET_IFNAME=eth0 NCCL_P2P_DISABLE=1 NCCL_DEBUG=WARN \
		CUDA_VISIBLE_DEVICES=0,1,2,3 NCCLSIM_GPUS=4 \
		LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
		"$PROBE" --id "$NG_TMP/id" --mutate $VARS >"$NG_TMP/out.$r" 2>"$NG_TMP/err.$r" &
done
wait_all=0
for r in 0 1 2 3; do wait || wait_all=1; done
for r in 0 1 2 3; do
	out="$NG_TMP/out.$r"; err="$NG_TMP/err.$r"
	grep -q "^init " "$out" || { cat "$err"; fail "rank $r did not reach init"; }
	gpu=$((3 - r))
	assert_grep "^main NCCL_SOCKET_IFNAME==ib0$" "$out"
	assert_grep "^main NCCL_P2P_DISABLE=<unset>$" "$out"
	assert_grep "^main NCCL_IB_DISABLE=1$" "$out"
	assert_grep "^main NCCL_DEBUG=WARN$" "$out"
	assert_grep "^main CUDA_VISIBLE_DEVICES=$gpu$" "$out"
	assert_grep "^main CUDA_DEVICE_ORDER=PCI_BUS_ID$" "$out"
	# After the program's own changes: restored before NCCL read them.
	assert_grep "^init NCCL_SOCKET_IFNAME==ib0$" "$out"
	assert_grep "^init NCCL_P2P_DISABLE=<unset>$" "$out"
	assert_grep "^init NCCL_IB_DISABLE=1$" "$out"
	# cudaSetDevice(LOCAL_RANK) on a process that sees one GPU.
	assert_grep "^cudaSetDevice($r) = 0, device 0$" "$out"
	# NUMA: GPUs 0,1 near cpu 0, GPUs 2,3 near the last cpu of the two.
	if [ "$(nproc)" -gt 1 ]; then
		want=$([ $gpu -le 1 ] && echo 0 || echo 1)
		assert_grep "^affinity $want$" "$out"
	fi
	# The env plugin NCCL >= 2.28.7 loads: the policy, whatever the environment.
	assert_grep "^plugin NCCL_SOCKET_IFNAME==ib0$" "$out"
	assert_grep "^plugin NCCL_P2P_DISABLE=<unset>$" "$out"
	# NCCL 2.30's v2 serves the same.
	assert_eq "$(sed -n 's/^plugin_v2 //p' "$out")" "$(sed -n 's/^plugin //p' "$out")" "v2 as v1"
	# One log line per decision, warnings for the overridden values.
	assert_grep "policy: NCCL_SOCKET_IFNAME==ib0 enforced by $POL:2; the value 'eth0' is ignored" "$err"
	assert_grep "policy: NCCL_P2P_DISABLE=1 removed: forbidden by $POL:3" "$err"
	assert_grep "local rank $r pinned to GPU $gpu" "$err"
	assert_grep "restored before ncclCommInitRank\|restored before ncclGetUniqueId" "$err"
	[ $r = 0 ] || assert_grep "cudaSetDevice($r) -> device 0" "$err"
done
[ $wait_all = 0 ] || fail "a rank failed"

note "NCCL's configuration file: its forbidden variable withheld, its default kept, its enforced one overridden"
CONF="$NG_TMP/nccl.conf"
printf 'NCCL_P2P_DISABLE=1\nNCCL_IB_DISABLE=0\nNCCL_SOCKET_IFNAME=eth0\n' >"$CONF"
out="$NG_TMP/conf.out" err="$NG_TMP/conf.err"
rm -f "$NG_TMP/id"
env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 NCCLGUARD_POLICY="$POL" NCCLGUARD_SYSROOT="$NG_TMP/host" \
	NCCLGUARD_LOG=verbose NCCL_CONF_FILE="$CONF" NCCLSIM_GPUS=4 LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
	"$PROBE" --id "$NG_TMP/id" $VARS >"$out" 2>"$err" || { cat "$err"; fail "the probe with NCCL_CONF_FILE failed"; }
# The shim applies nothing of the file: the program does not see it.
assert_grep "^main NCCL_P2P_DISABLE=<unset>$" "$out"
assert_grep "^main NCCL_IB_DISABLE=<unset>$" "$out"
# NCCL applies it at its first call (the CPU backend does as NCCL does),
# where the environment has nothing: the file's value, not the policy's default.
assert_grep "^init NCCL_IB_DISABLE=0$" "$out"
assert_grep "^init NCCL_SOCKET_IFNAME==ib0$" "$out"
assert_grep "^plugin NCCL_P2P_DISABLE=<unset>$" "$out"
assert_grep "policy: NCCL_P2P_DISABLE=1 in $CONF: forbidden by $POL:3; withheld from NCCL by the shim's env plugin" "$err"
assert_grep "remove it from $CONF" "$err"
assert_eq "$(grep -c "NCCL_P2P_DISABLE=1 in $CONF" "$err")" 1 "the withheld variable's warnings (one, at start)"
assert_grep "policy: NCCL_IB_DISABLE=0 kept from $CONF (the default 1 of $POL:4" "$err"
assert_grep "policy: NCCL_SOCKET_IFNAME==ib0 enforced by $POL:2; the value 'eth0' from $CONF is ignored" "$err"
# Once NCCL has put the file's values in the environment, the checks
# before each init do not take them for the program's.
assert_no_grep "NCCL_P2P_DISABLE=1 removed" "$err"
assert_no_grep "violation" "$err"

note "a forbidden variable from NCCL's file: the same on every rank, whether NCCL asks the plugin or not"
# Rank 0's NCCL applies the file at ncclGetUniqueId, before the check that
# precedes its init; rank 1's only inside its init.  Neither may end up
# with a different value from the other.
POL2="$NG_TMP/etc/algo.conf"
printf '[env]\nNCCL_ALGO = forbid\n' >"$POL2"
chmod 600 "$POL2"
printf 'NCCL_ALGO=Tree\n' >"$NG_TMP/algo.nccl.conf"
# The CPU backend loads the env plugin as its version would (2.30:
# ncclEnvPlugin_v2, 2.28: _v1, 2.27: none) and says what it reads
# (NCCLSIM_ENV_SHOW): the policy's view through v2 exactly as through v1.
for version in 23007 22809 22700; do
	rm -f "$NG_TMP/id"
	for r in 0 1; do
		env RANK=$r LOCAL_RANK=0 WORLD_SIZE=2 NCCLGUARD_POLICY="$POL2" NCCLGUARD_SYSROOT="$NG_TMP/host" \
			NCCLGUARD_LOG=verbose NCCL_DEBUG=INFO NCCLSIM_ENV_SHOW=NCCL_ALGO \
			NCCL_CONF_FILE="$NG_TMP/algo.nccl.conf" NCCLSIM_VERSION=$version \
			LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
			"$PROBE" --id "$NG_TMP/id" NCCL_ALGO >"$NG_TMP/algo.$version.$r.out" \
			2>"$NG_TMP/algo.$version.$r.err" &
	done
	wait_all=0
	for r in 0 1; do wait || wait_all=1; done
	[ $wait_all = 0 ] || { cat "$NG_TMP"/algo.$version.*.err; fail "NCCL $version: a rank failed"; }
	for r in 0 1; do
		out="$NG_TMP/algo.$version.$r.out" err="$NG_TMP/algo.$version.$r.err"
		# What NCCL reads from the environment: the file's, on both ranks.
		assert_grep "^init NCCL_ALGO=Tree$" "$out"
		case $version in
		23007)	assert_grep "^ncclsim: NCCL INFO ENV/Plugin: Using ncclguard (v2)$" "$err" ;;
		22809)	assert_grep "^ncclsim: NCCL INFO ENV/Plugin: Using ncclguard (v1)$" "$err" ;;
		*)	assert_no_grep "ENV/Plugin: Using" "$err" ;;
		esac
		if [ $version != 22700 ]; then
			assert_grep "^plugin NCCL_ALGO=<unset>$" "$out"
			assert_grep "withheld from NCCL by the shim's env plugin" "$err"
			# What the backend itself reads through the plugin.
			assert_grep "^ncclsim: env NCCL_ALGO=<unset>$" "$err"
		else
			assert_grep "NCCL applies it all the same" "$err"
			assert_grep "^ncclsim: env NCCL_ALGO=Tree$" "$err"
		fi
		assert_no_grep "NCCL_ALGO=Tree removed" "$err"
	done
done

AR="$NG_BUILD/bin/allreduce_example"
if [ -x "$AR" ]; then
	note "examples/allreduce --launch 4 under the policy, by default: one policy line for the host"
	NCCLGUARD_POLICY="$POL" NCCLGUARD_SYSROOT="$NG_TMP/host" NCCLSIM_GPUS=4 \
		NCCL_SOCKET_IFNAME=eth0 NCCL_P2P_DISABLE=1 \
		LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
		"$AR" --launch 4 --max-bytes 1K >"$NG_TMP/quiet.out" 2>"$NG_TMP/quiet.err" ||
		{ cat "$NG_TMP/quiet.err"; fail "allreduce --launch 4 failed under the policy"; }
	assert_eq "$(grep -c '^ncclguard\[' "$NG_TMP/quiet.err")" 1 "ncclguard lines by default"
	assert_grep "^ncclguard\[rank 0 pid [0-9]*\]: policy $POL: 1 enforced, 1 default, 1 forbidden, NCCL_SOCKET_IFNAME==ib0, local rank 0 on GPU 3 (NUMA 1)" "$NG_TMP/quiet.err"
	assert_grep "each setting with NCCLGUARD_LOG=verbose" "$NG_TMP/quiet.err"

	note "examples/allreduce --launch 4 under the policy: every rank pinned, runs clean"
	NCCLGUARD_POLICY="$POL" NCCLGUARD_SYSROOT="$NG_TMP/host" NCCLSIM_GPUS=4 NCCLGUARD_LOG=verbose \
		NCCL_SOCKET_IFNAME=eth0 NCCL_P2P_DISABLE=1 \
		LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
		"$AR" --launch 4 >"$NG_TMP/ar.out" 2>"$NG_TMP/ar.err" ||
		{ cat "$NG_TMP/ar.err"; fail "allreduce --launch 4 failed under the policy"; }
	for r in 0 1 2 3; do
		assert_grep "rank $r pid [0-9]*\]: policy: CUDA_VISIBLE_DEVICES=$((3 - r)): local rank $r pinned" "$NG_TMP/ar.err"
		assert_grep "rank $r pid [0-9]*\]: policy: NCCL_SOCKET_IFNAME==ib0 (enforced by $POL:2; already set)" "$NG_TMP/ar.err"
	done
	assert_no_grep "violation" "$NG_TMP/ar.err"
else
	note "no $AR: allreduce example skipped"
fi
echo ok
