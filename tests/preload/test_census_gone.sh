#!/bin/sh
# The API census never harms the job: a process whose libnccl's file was
# removed after it was loaded (an upgrade under a running job) warns once
# that the census could not run and why, and its NCCL call returns as
# before.  The same process with the file in place says nothing.
. "$NG_ROOT/tests/lib.sh"
P="$NG_BUILD/tests/preload/census_gone"
[ -x "$P" ] || fail "$P not built"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_VERSION=22809

# run NAME [keep]: the program on a copy of the CPU backend's libnccl.so.2.
run() {
	mkdir -p "$NG_TMP/$1"
	cp "$NG_SIM/libnccl.so.2" "$NG_TMP/$1/libnccl.so.2"
	LD_PRELOAD="$NG_PRELOAD" timeout 60 "$P" "$NG_TMP/$1/libnccl.so.2" ${2:-} \
		>"$NG_TMP/$1.out" 2>"$NG_TMP/$1.err" || { cat "$NG_TMP/$1.err"; fail "$1: exit $?"; }
	assert_grep "ncclGetVersion: 0, version 22809" "$NG_TMP/$1.out"
}

run gone
assert_eq "$(grep -c 'cannot take the census' "$NG_TMP/gone.err")" 1 "one warning"
assert_grep "ncclguard\[rank ? pid [0-9]*\]: cannot take the census of NCCL 2.28.9's functions at $NG_TMP/gone/libnccl.so.2 (cannot be opened or mapped: No such file or directory): a newer NCCL's functions, whose calls are not recorded, go unnoticed" "$NG_TMP/gone.err"
run here keep
assert_no_grep "ncclguard" "$NG_TMP/here.err"
echo ok
