#!/bin/sh
# `ncclguard run` checks --inject, --policy and the timeouts before it
# starts anything: a refusal is one line, exit status 2, and leaves no
# trace folder, session daemon or flight folder.  A policy that passes
# prints one line for the host by default, not one per setting and rank.
. "$NG_ROOT/tests/e2e/common.sh"
. "$NG_ROOT/tests/policy/fakehost.sh"
AR="$NG_BUILD/bin/allreduce_example"
SHM=$(ng_rundir)
mkdir "$NG_TMP/cwd"
cd "$NG_TMP/cwd" || fail "no $NG_TMP/cwd"
shm_before=$(ls -A "$SHM" 2>/dev/null | sort)

# refused NAME ARGS...: exit 2, one line naming the problem, nothing left.
refused() {
	name=$1; shift
	rc=0
	"$NG_BIN" run "$@" >"$NG_TMP/$name.out" 2>"$NG_TMP/$name.err" || rc=$?
	assert_eq "$rc" 2 "$name: exit status"
	assert_eq "$(wc -l <"$NG_TMP/$name.err")" 1 "$name: lines on stderr"
	assert_no_grep "preloaded" "$NG_TMP/$name.err"
	assert_eq "$(ls -A "$NG_TMP/cwd")" "" "$name: what it left in the current folder"
	[ ! -e "$NG_TMP/out" ] || fail "$name: made the trace folder"
	[ ! -e "$NG_TMP/.lttng" ] || fail "$name: started a session daemon"
	assert_eq "$(ls -A "$SHM" 2>/dev/null | sort)" "$shm_before" "$name: flight folders"
}

note "a bad --inject spec"
refused inject -o "$NG_TMP/out" --inject "drop:rank=1,op=allreduc,seq=7" -- "$AR" --launch 4
assert_grep "^ncclguard run: --inject 'drop:rank=1,op=allreduc,seq=7': op=allreduc" "$NG_TMP/inject.err"
assert_grep "see \`ncclguard run --help\`" "$NG_TMP/inject.err"
refused inject2 --inject "delay:rank=1" -- true
assert_grep "delay needs ms=N" "$NG_TMP/inject2.err"
note "--inject rules that could never fire"
refused inject3 --inject "drop:rank=99999999999" -- true
assert_grep "rank=99999999999 in drop: not a rank" "$NG_TMP/inject3.err"
refused inject4 --inject "stall:op=allreduce,count=0" -- true
assert_grep "count=0 in stall: not a positive number" "$NG_TMP/inject4.err"
NCCLGUARD_INJECT="drop:rank=1,rank=2" refused inject5 -- true
assert_grep "^ncclguard run: NCCLGUARD_INJECT='drop:rank=1,rank=2': rank=2 in drop: rank given twice" \
	"$NG_TMP/inject5.err"

note "a malformed --policy: FILE:LINE"
mkdir -m 700 "$NG_TMP/etc"
printf '[env]\nNCCL_SOCKET_IFNAME = enforce\n' >"$NG_TMP/etc/bad.conf"
refused policy -o "$NG_TMP/out" --policy "$NG_TMP/etc/bad.conf" -- true
assert_grep "^ncclguard run: --policy $NG_TMP/etc/bad.conf:2: NCCL_SOCKET_IFNAME = enforce needs a value" \
	"$NG_TMP/policy.err"

note "a policy that enforces, writable by others: the shim would refuse it"
printf '[env]\nNCCL_SOCKET_IFNAME = enforce =ib0\n' >"$NG_TMP/etc/open.conf"
chmod 666 "$NG_TMP/etc/open.conf"
refused open -o "$NG_TMP/out" --policy "$NG_TMP/etc/open.conf" -- true
assert_grep "refused: .*writable by others" "$NG_TMP/open.err"

note "the same from the environment the job would inherit"
NCCLGUARD_INJECT="stall:op=allreduc" refused envinject -o "$NG_TMP/out" -- true
assert_grep "^ncclguard run: NCCLGUARD_INJECT='stall:op=allreduc': op=allreduc" "$NG_TMP/envinject.err"
NCCLGUARD_POLICY="$NG_TMP/etc/bad.conf" refused envpolicy -o "$NG_TMP/out" -- true
assert_grep "^ncclguard run: NCCLGUARD_POLICY $NG_TMP/etc/bad.conf:2: " "$NG_TMP/envpolicy.err"

note "a missing policy, bad timeouts, unknown options"
refused nopolicy --policy "$NG_TMP/etc/none.conf" -- true
refused timeout --timeout 0 -- true
note "timeouts below 1 ms: every call would exceed them"
refused tiny --timeout 1e-300 -- true
assert_grep "^ncclguard run: --timeout '1e-300': below 1 ms" "$NG_TMP/tiny.err"
refused tiny2 --timeout 0.0009 -- true
NCCLGUARD_TIMEOUT=1e-300 refused envtiny -- true
assert_grep "^ncclguard run: NCCLGUARD_TIMEOUT='1e-300': below 1 ms" "$NG_TMP/envtiny.err"
NCCLGUARD_INIT_TIMEOUT=0.0001 refused envinit -- true
assert_grep "^ncclguard run: NCCLGUARD_INIT_TIMEOUT='0.0001': below 1 ms" "$NG_TMP/envinit.err"
NCCLGUARD_INIT_TIMEOUT=nan refused envnan -- true
refused ontimeout --on-timeout sometimes -- true
refused option --bogus -- true
refused novalue --inject
refused nocmd -o "$NG_TMP/out"

if [ -x "$AR" ] && [ -e "$NG_SIM/libnccl.so.2" ]; then
	note "4 ranks under examples/policy/site.conf: one policy line for the host"
	ng_fake_host "$NG_TMP/host"
	# The fake host has one active InfiniBand port.
	sed 's/^NCCL_IB_HCA .*/NCCL_IB_HCA = enforce =mlx5_0:1/' \
		"$NG_ROOT/examples/policy/site.conf" >"$NG_TMP/etc/site.conf"
	chmod 600 "$NG_TMP/etc/site.conf"
	rc=0
	NCCLGUARD_SYSROOT="$NG_TMP/host" NCCLSIM_GPUS=4 LD_LIBRARY_PATH="$NG_SIM" \
		"$NG_BIN" run -o "$NG_TMP/job" --policy "$NG_TMP/etc/site.conf" -- \
		"$AR" --launch 4 --max-bytes 1K >"$NG_TMP/job.out" 2>"$NG_TMP/job.err" || rc=$?
	assert_eq "$rc" 0 "exit status of the job"
	assert_eq "$(grep -c '^ncclguard\[.*policy' "$NG_TMP/job.err")" 1 "policy lines on stderr"
	assert_grep "^ncclguard\[rank 0 pid [0-9]*\]: policy $NG_TMP/etc/site.conf: 2 enforced, 1 default, 1 forbidden, NCCL_SOCKET_IFNAME==ib0, local rank 0 on GPU 0 (NUMA 0);" \
		"$NG_TMP/job.err"
	assert_no_grep "violation" "$NG_TMP/job.err"
else
	note "no $AR or CPU backend: the job under a policy skipped"
fi
echo ok
