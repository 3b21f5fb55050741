#!/bin/sh
# Exit 3 before NCCL starts: a missing interface (from the policy, from the
# user, or set by the program after start), an IB HCA that matches nothing,
# a policy file others can write; `[violation] action = warn` goes on.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/policy/fakehost.sh"
PROBE="$NG_BUILD/tests/policy/envprobe"
[ -x "$PROBE" ] || fail "no $PROBE"
ng_fake_host "$NG_TMP/host"
mkdir -m 700 "$NG_TMP/etc"
POL="$NG_TMP/etc/p.conf"

# run_probe NAME [ENV=VALUE...]: one rank; status in $rc.
run_probe() {
	name=$1; shift
	rm -f "$NG_TMP/id"
	env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 NCCLGUARD_POLICY="$POL" \
		NCCLGUARD_SYSROOT="$NG_TMP/host" LD_LIBRARY_PATH="$NG_SIM" \
		LD_PRELOAD="$NG_PRELOAD" "$@" "$PROBE" --id "$NG_TMP/id" NCCL_SOCKET_IFNAME \
		>"$NG_TMP/$name.out" 2>"$NG_TMP/$name.err"
	rc=$?
}
policy() { printf "$1" >"$POL"; chmod "${2:-600}" "$POL"; }

note "enforced interface that does not exist"
policy '[env]\nNCCL_SOCKET_IFNAME = enforce =ib9\n[network]\nrequire_up = yes\n'
run_probe missing
assert_eq "$rc" 3 "exit status, missing interface"
assert_grep "policy violation: NCCL_SOCKET_IFNAME==ib9: no interface named ib9" "$NG_TMP/missing.err"
assert_grep "fix: correct the policy's NCCL_SOCKET_IFNAME ($POL:2)" "$NG_TMP/missing.err"
assert_grep "stopping before NCCL starts (exit 3)" "$NG_TMP/missing.err"
[ ! -s "$NG_TMP/missing.out" ] || fail "the program ran: $(cat "$NG_TMP/missing.out")"

note "the user's interface is down (require_up)"
policy '[network]\nrequire_up = yes\n'
run_probe down NCCL_SOCKET_IFNAME==ib1
assert_eq "$rc" 3 "exit status, interface down"
assert_grep "NCCL_SOCKET_IFNAME==ib1 selects ib1, which is up, not running" "$NG_TMP/down.err"

note "NCCL's configuration file picks a denied interface: exit 3, the file named as the fix"
policy '[network]\ndeny = eth0\n'
printf '# the management network\nNCCL_SOCKET_IFNAME=eth0\n' >"$NG_TMP/nccl.conf"
run_probe conf NCCL_CONF_FILE="$NG_TMP/nccl.conf"
assert_eq "$rc" 3 "exit status, a denied interface from NCCL's configuration file"
assert_grep "policy violation: NCCL_SOCKET_IFNAME=eth0 selects eth0, which deny = eth0" "$NG_TMP/conf.err"
assert_grep "fix: correct NCCL_SOCKET_IFNAME in $NG_TMP/nccl.conf (NCCL's configuration file)" "$NG_TMP/conf.err"

note "the program sets a missing interface after start: caught before ncclGetUniqueId"
rm -f "$NG_TMP/id"
env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 NCCLGUARD_POLICY="$POL" NCCLGUARD_SYSROOT="$NG_TMP/host" \
	LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
	"$PROBE" --id "$NG_TMP/id" --set NCCL_SOCKET_IFNAME==ib7 NCCL_SOCKET_IFNAME \
	>"$NG_TMP/late.out" 2>"$NG_TMP/late.err"
assert_eq "$?" 3 "exit status, interface set after start"
assert_grep "^main NCCL_SOCKET_IFNAME=<unset>" "$NG_TMP/late.out"
assert_no_grep "^init" "$NG_TMP/late.out"
assert_grep "violation.*before ncclGetUniqueId" "$NG_TMP/late.err"

note "NCCL_IB_HCA that matches no active port"
policy '[env]\nNCCL_IB_HCA = enforce mlx5_1\n'
run_probe hca
assert_eq "$rc" 3 "exit status, HCA"
assert_grep "silently fall back to sockets" "$NG_TMP/hca.err"

note "NCCL_IB_HCA with an empty port: port 0 to NCCL, which no port is"
policy '[env]\nNCCL_IB_HCA = enforce mlx5_0:\n'
run_probe hcaport
assert_eq "$rc" 3 "exit status, HCA with an empty port"
assert_grep "NCCL_IB_HCA=mlx5_0:.*matches no active" "$NG_TMP/hcaport.err"

note "warn instead of fail"
policy '[env]\nNCCL_SOCKET_IFNAME = enforce =ib9\n[violation]\naction = warn\n'
run_probe warn
assert_eq "$rc" 0 "exit status with action = warn"
assert_grep "going on (\[violation\] action = warn)" "$NG_TMP/warn.err"
assert_grep "^init NCCL_SOCKET_IFNAME==ib9" "$NG_TMP/warn.out"

note "the suggested interface is not a denied one"
policy '[network]\nrequire_up = yes\ndeny = eth0,docker0\n'
run_probe denyfix NCCL_SOCKET_IFNAME==ib9
assert_eq "$rc" 3 "exit status, missing interface with deny"
assert_grep "fix: set NCCL_SOCKET_IFNAME to what this host has, e.g. =ib0" "$NG_TMP/denyfix.err"

note "a policy others can write is refused"
policy '[env]\nNCCL_SOCKET_IFNAME = enforce =ib0\n' 666
run_probe trust
assert_eq "$rc" 3 "exit status, writable policy"
assert_grep "refusing $POL: policy file $POL is writable by others" "$NG_TMP/trust.err"
# strict = yes alone removes variables: it is enforcing too
policy '[env]\nstrict = yes\nNCCL_DEBUG = allow\n' 666
run_probe truststrict
assert_eq "$rc" 3 "exit status, writable strict policy"
assert_grep "refusing $POL: policy file $POL is writable by others" "$NG_TMP/truststrict.err"
policy '[env]\nNCCL_SOCKET_IFNAME = enforce =ib0\n' 600
chmod 777 "$NG_TMP/etc"
run_probe trustdir
chmod 700 "$NG_TMP/etc"
assert_eq "$rc" 3 "exit status, writable folder"
assert_grep "its folder $NG_TMP/etc is writable by others" "$NG_TMP/trustdir.err"

note "an enforced plugin others could replace: refused, and never set"
mkdir -m 777 "$NG_TMP/w"
: >"$NG_TMP/w/net.so"
# probe_plugin NAME: one rank, showing NCCL_NET_PLUGIN; status in $rc.
probe_plugin() {
	rm -f "$NG_TMP/id"
	env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 NCCLGUARD_POLICY="$POL" \
		NCCLGUARD_SYSROOT="$NG_TMP/host" LD_LIBRARY_PATH="$NG_SIM" NCCL_SOCKET_IFNAME=ib0 \
		LD_PRELOAD="$NG_PRELOAD" "$PROBE" --id "$NG_TMP/id" NCCL_NET_PLUGIN \
		>"$NG_TMP/$1.out" 2>"$NG_TMP/$1.err"
	rc=$?
}
policy "[env]\nNCCL_NET_PLUGIN = enforce $NG_TMP/w/net.so\n"
probe_plugin netplugin
assert_eq "$rc" 3 "exit status, untrusted plugin path"
assert_grep "policy violation: NCCL_NET_PLUGIN=$NG_TMP/w/net.so (enforced by $POL:2) refused: its folder $NG_TMP/w is writable by others" "$NG_TMP/netplugin.err"
policy "[env]\nNCCL_NET_PLUGIN = enforce $NG_TMP/w/net.so\n[violation]\naction = warn\n"
probe_plugin netwarn
assert_eq "$rc" 0 "exit status, untrusted plugin path, action = warn"
assert_grep "^main NCCL_NET_PLUGIN=<unset>" "$NG_TMP/netwarn.out"
assert_grep "^init NCCL_NET_PLUGIN=<unset>" "$NG_TMP/netwarn.out"
assert_no_grep "NCCL_NET_PLUGIN=$NG_TMP" "$NG_TMP/netwarn.out"
chmod 755 "$NG_TMP/w"
probe_plugin nettrusted
assert_eq "$rc" 0 "exit status, trusted plugin path"
assert_grep "^init NCCL_NET_PLUGIN=$NG_TMP/w/net.so" "$NG_TMP/nettrusted.out"

note "a malformed policy names file and line"
policy '[env]\nNCCL_SOCKET_IFNAME = enforce =ib0\n[devices]\npin = sometimes\n'
run_probe bad
assert_eq "$rc" 3 "exit status, malformed policy"
assert_grep "policy error: $POL:4: pin = 'sometimes': expected none or local_rank" "$NG_TMP/bad.err"

note "a good policy: runs"
policy '[env]\nNCCL_SOCKET_IFNAME = enforce =ib0\n[network]\nrequire_up = yes\n'
run_probe good
assert_eq "$rc" 0 "exit status, good policy"
assert_grep "^init NCCL_SOCKET_IFNAME==ib0" "$NG_TMP/good.out"

note "NCCL_ENV_PLUGIN = forbid keeps out the user's plugin, not the shim's own"
policy '[env]\nNCCL_ENV_PLUGIN = forbid\n'
run_probe plugin NCCLGUARD_LOG=verbose NCCL_ENV_PLUGIN=/opt/x.so
assert_eq "$rc" 0 "exit status, forbidden plugin"
assert_grep "NCCL_ENV_PLUGIN=/opt/x.so removed: forbidden" "$NG_TMP/plugin.err"
assert_no_grep "libncclguard.so removed\|NCCL_ENV_PLUGIN changed after start" "$NG_TMP/plugin.err"
echo ok
