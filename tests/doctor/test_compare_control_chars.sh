#!/bin/sh
# `doctor --compare` on files whose host names and values hold ESC and BEL
# (a file from another host is anyone's words): printed escaped, never raw.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
cd "$NG_TMP" || exit 1

# no_raw FILE: no control byte but newline in FILE.
no_raw() {
	if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$1"; then
		echo "--- $1:"; od -c "$1" | head -20
		fail "raw control characters in $1"
	fi
}
# host FILE NAME MTU: a doctor file (JSON escapes as written).
host() {
	cat >"$1" <<JSON
{"schema": "ncclguard-doctor/1", "host": "$2", "time": "2026-01-01T00:00:00Z",
 "checks": [{"id": "net.mtu.eth0", "status": "ok", "value": "$3", "detail": null, "fix": null},
            {"id": "gpu.model", "status": "fail", "value": "H100", "detail": "x\\u0007", "fix": null}]}
JSON
}
host a.json 'node-a' '1500'
host b.json 'evil\u001b]0;owned\u0007' '9000\u001b[2J\u0007'
rc=0
"$NG_BIN" doctor --compare a.json b.json >out 2>err || rc=$?
cat out err
assert_eq "$rc" 1 "exit status"
no_raw out
no_raw err
assert_grep '^ncclguard doctor --compare: 2 hosts: node-a, evil\\x1b\]0;owned\\a$' out
assert_grep '^  BREAKS  net.mtu.eth0  *1500: node-a | 9000\\x1b\[2J\\a: evil\\x1b\]0;owned\\a$' out
assert_grep '^failed checks on: node-a (1), evil\\x1b\]0;owned\\a (1)$' out

note "a file name with ESC in a folder given to --compare"
mkdir d
cp a.json d/
printf 'not json' >"d/$(printf 'bad\033[2J').json"
rc=0
"$NG_BIN" doctor --compare d >out 2>err || rc=$?
cat out err
assert_eq "$rc" 2 "exit status"
no_raw err
assert_grep 'bad\\x1b\[2J.json: not a doctor file' err
echo ok
