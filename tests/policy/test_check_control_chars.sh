#!/bin/sh
# ncclguard policy check quotes the policy file (its values, its bad
# lines): ESC and BEL in them are printed escaped, never raw.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/policy/fakehost.sh"
ng_fake_host "$NG_TMP/host"
mkdir -m 700 "$NG_TMP/etc"
P="$NG_TMP/etc/p.conf"
export NCCLGUARD_SYSROOT="$NG_TMP/host"
unset NCCL_SOCKET_IFNAME NCCL_IB_HCA LOCAL_WORLD_SIZE 2>/dev/null

# no_raw FILE: no control byte but newline in FILE.
no_raw() {
	if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$1"; then
		echo "--- $1:"; od -c "$1" | head -20
		fail "raw control characters in $1"
	fi
}

note "a value with ESC and BEL"
printf '[env]\nNCCL_DEBUG = enforce =WARN\033]0;owned\007\n' >"$P"
chmod 600 "$P"
"$NG_BIN" policy check "$P" >"$NG_TMP/o" 2>"$NG_TMP/e"
cat "$NG_TMP/o" "$NG_TMP/e"
no_raw "$NG_TMP/o"
no_raw "$NG_TMP/e"
assert_grep 'NCCL_DEBUG==WARN\\x1b\]0;owned\\a' "$NG_TMP/o"

note "a bad line with ESC"
printf '[env]\nNCCL_\033[2J = enforce\n' >"$P"
"$NG_BIN" policy check "$P" >"$NG_TMP/o" 2>"$NG_TMP/e"
assert_eq "$?" 1 "exit status, malformed"
cat "$NG_TMP/e"
no_raw "$NG_TMP/e"
assert_grep "p.conf:2: 'NCCL_\\\\x1b\\[2J' is not" "$NG_TMP/e"
echo ok
