#!/bin/sh
# Strings from a trace (a host name) and from a run record (disk_detail,
# consumer_error, host, command) reach the summary with their control
# characters escaped: ESC or BEL in them never acts on the terminal.
# report.json keeps them, escaped by JSON's rules.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
cd "$NG_TMP" || exit 1

# no_raw FILE: no control byte but newline in FILE.
no_raw() {
	if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$1"; then
		echo "--- $1:"; od -c "$1" | head -20
		fail "raw control characters in $1"
	fi
}

note "a host name with ESC and BEL in the trace"
"$GEN" -o T --ranks 2 --script "$NG_ROOT/tests/analyze/scripts/p2p_peer_done.txt" \
	--host "$(printf 'node\033]0;owned\007\033[2J')" || fail gen
"$NG_BIN" analyze T --json T.json >T.txt 2>T.err || fail "analyze: exit $?"
cat T.txt T.err
no_raw T.txt
no_raw T.err
assert_grep '^  rank 0     node\\x1b\]0;owned\\a\\x1b\[2J ' T.txt
# report.json keeps the name, escaped by JSON's rules.
no_raw T.json
python3 -c '
import json
r = json.load(open("T.json"))
assert r["ranks"][0]["host"] == "node\x1b]0;owned\x07\x1b[2J", r["ranks"][0]
' || fail "report.json does not keep the host name"

note "a run record with ESC and BEL in its strings"
cat >T/run.json <<'JSON'
{"schema": "ncclguard-run/1", "job": "", "host": "n\u001b[31m0", "command": "x\u0007y",
 "status": "failed", "disk_full": true, "disk_detail": "No space\u001b]0;owned\u0007 left",
 "free_bytes_start": 1048576, "free_bytes_end": 0,
 "consumer_error": "lost\u001b[2J\u0007\nsecond line"}
JSON
"$NG_BIN" analyze T --json R.json >R.txt 2>R.err || fail "analyze: exit $?"
cat R.txt R.err
no_raw R.txt
no_raw R.err
assert_grep 'disk_full: .*No space\\x1b\]0;owned\\a left' R.txt
assert_grep 'events_lost: .*lost\\x1b\[2J\\a\\nsecond line' R.txt
python3 -c '
import json
r = json.load(open("R.json"))
d = [i["detail"] for i in r["incomplete"]]
assert any("No space\x1b]0;owned\x07 left" in x for x in d), d
' || fail "report.json does not keep the run record's words"
echo ok
