#!/bin/sh
# Exit status pass-through, NCCL versions (NCCLSIM_VERSION, mixed across
# ranks), the unique id handed over as a file, the simulated devices.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

note "exit status of the first failing rank"
timeout 60 "$EXAMPLE" --launch 2 --max-bytes 64 --iters 1 --exit-code 7 >"$NG_TMP/rc.log" 2>&1
assert_eq "$?" 7 "exit status through the launcher"
timeout 60 "$EXAMPLE" --launch 2 --op nosuchop >"$NG_TMP/rc.log" 2>&1
assert_eq "$?" 2 "bad option"

note "NCCLSIM_VERSION"
assert_eq "$("$SIMTEST" version)" 22809 "default version"
assert_eq "$(NCCLSIM_VERSION=22703 "$SIMTEST" version)" 22703 "simulated version"
assert_eq "$(NCCLSIM_VERSION=23007 "$SIMTEST" version)" 23007 "simulated 2.30"
for bad in 21903 99999 2.30 x; do
	v=$(NCCLSIM_VERSION=$bad "$SIMTEST" version 2>"$NG_TMP/bad.err")
	assert_eq "$v" 22809 "NCCLSIM_VERSION=$bad played as"
	assert_grep "NCCLSIM_VERSION=$bad is not a version the CPU backend plays (2.27 to 2.30" "$NG_TMP/bad.err"
done

note "two ranks started by hand with different versions, id through a file"
id="$NG_TMP/id"
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 NCCLSIM_VERSION=22703 timeout 60 "$EXAMPLE" --id-file "$id" \
	--check --max-bytes 4K >"$NG_TMP/r1.log" 2>&1 &
r1=$!
RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 timeout 60 "$EXAMPLE" --id-file "$id" --check --max-bytes 4K \
	>"$NG_TMP/r0.log" 2>&1 || { cat "$NG_TMP/r0.log"; fail "rank 0"; }
wait $r1 || { cat "$NG_TMP/r1.log"; fail "rank 1"; }
assert_grep "rank 0: check OK" "$NG_TMP/r0.log"
assert_grep "rank 1: check OK" "$NG_TMP/r1.log"

note "devices: NCCLSIM_GPUS, CUDA_VISIBLE_DEVICES"
run_ok "$NG_TMP/dev.log" "$SIMTEST" devices
assert_grep "OK devices 8" "$NG_TMP/dev.log"
CUDA_VISIBLE_DEVICES=3,1 run_ok "$NG_TMP/dev.log" "$SIMTEST" devices
assert_grep "device 0 0000:13:00.0 NCCLSIM CPU GPU" "$NG_TMP/dev.log"
assert_grep "device 1 0000:11:00.0" "$NG_TMP/dev.log"
assert_grep "OK devices 2" "$NG_TMP/dev.log"
NCCLSIM_GPUS=2 CUDA_VISIBLE_DEVICES=0,5 run_ok "$NG_TMP/dev.log" "$SIMTEST" devices
assert_grep "OK devices 1" "$NG_TMP/dev.log"
CUDA_VISIBLE_DEVICES= run_ok "$NG_TMP/dev.log" "$SIMTEST" devices
assert_grep "OK devices 0" "$NG_TMP/dev.log"
echo "PASS process"
