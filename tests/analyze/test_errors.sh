#!/bin/sh
# A missing, empty or corrupt trace: a clear message, a non-zero exit, no
# crash and no half-written report.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"

# expect_fail NAME PATTERN ARGS...: exit 1 or 2, message on stderr
expect_fail() {
	name=$1; pat=$2; shift 2
	note "$name"
	"$NG_BIN" analyze "$@" > "$NG_TMP/out" 2> "$NG_TMP/err"
	rc=$?
	cat "$NG_TMP/err"
	[ "$rc" = 1 ] || [ "$rc" = 2 ] || fail "$name: exit $rc, expected 1 or 2"
	assert_grep "$pat" "$NG_TMP/err"
	assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$NG_TMP/err"
}

expect_fail "no argument" "no trace directory given"
expect_fail "unknown option" "unknown option" "$NG_TMP" --frobnicate
expect_fail "bad --link-gbps" "expected a positive number" "$NG_TMP" --link-gbps fast
expect_fail "missing dir" "No such file or directory" "$NG_TMP/does-not-exist"

mkdir -p "$NG_TMP/empty"
expect_fail "empty dir" "no trace found" "$NG_TMP/empty"
[ -z "$(ls "$NG_TMP/empty")" ] || fail "empty dir: files were left behind: $(ls "$NG_TMP/empty")"

# `run --relay -o DIR`: DIR has the run record, the trace is elsewhere.
mkdir -p "$NG_TMP/runonly/hostx"
echo '{"schema": "ncclguard-run/1"}' > "$NG_TMP/runonly/hostx/run.json"
expect_fail "run records only" "no trace found under .*only run records" "$NG_TMP/runonly"
expect_fail "run records beside an empty dir" "no trace found" "$NG_TMP/runonly" "$NG_TMP/empty"

touch "$NG_TMP/plainfile"
expect_fail "a file, not a dir" "not a directory" "$NG_TMP/plainfile"

# metadata of zero bytes
mkdir -p "$NG_TMP/zero/ust/uid/0/64-bit"
: > "$NG_TMP/zero/ust/uid/0/64-bit/metadata"
expect_fail "empty metadata" "not a readable CTF trace" "$NG_TMP/zero"

# garbage metadata
"$GEN" -o "$NG_TMP/garbage" --ranks 2 --iters 3
head -c 3000 /dev/urandom > "$NG_TMP/garbage/ust/uid/0/64-bit/metadata"
expect_fail "garbage metadata" "not a readable CTF trace" "$NG_TMP/garbage"

# expect_partial NAME PATTERN DIR: the rest read (exit 0), what was left
# out named on stderr
expect_partial() {
	name=$1; pat=$2; dir=$3
	note "$name"
	"$NG_BIN" analyze "$dir" > "$NG_TMP/out" 2> "$NG_TMP/err"
	rc=$?
	cat "$NG_TMP/err"
	[ "$rc" = 0 ] || fail "$name: exit $rc, expected 0 (the other stream read)"
	assert_grep "$pat" "$NG_TMP/err"
	assert_grep "1 rank" "$NG_TMP/out"
	assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$NG_TMP/err"
	[ -s "$dir/report.json" ] || fail "$name: no report.json"
	[ -z "$(ls "$dir" | grep tmp)" ] || fail "$name: temp files left"
}

# a stream file cut in the middle of its first packet: left out, the other
# stream read
"$GEN" -o "$NG_TMP/cut" --ranks 2 --iters 20
f="$NG_TMP/cut/ust/uid/0/64-bit/channel0_1"
head -c 500 "$f" > "$f.tmp" && mv "$f.tmp" "$f"
expect_partial "truncated stream" "channel0_1: no whole packet in its 500 bytes; skipped" \
	"$NG_TMP/cut"

# a stream file overwritten with junk after its first packet header
"$GEN" -o "$NG_TMP/junk" --ranks 2 --iters 20
f="$NG_TMP/junk/ust/uid/0/64-bit/channel0_0"
head -c 200 "$f" > "$f.tmp" && head -c 4000 /dev/urandom >> "$f.tmp" && mv "$f.tmp" "$f"
expect_partial "junk stream" "channel0_0: no whole packet" "$NG_TMP/junk"

# a packet whose events are overwritten: found while reading, not
# indexing.  babeltrace2's muxer refuses the trace; ours drops what is
# implausible and says so in incomplete[].
"$GEN" -o "$NG_TMP/bad_event" --ranks 2 --iters 20
f="$NG_TMP/bad_event/ust/uid/0/64-bit/channel0_0"
printf '\377%.0s' $(seq 1 64) | dd of="$f" bs=1 seek=433 conv=notrunc 2>/dev/null
NCCLGUARD_ANALYZE_MUXER=1 expect_fail "bad event (muxer)" "corrupt trace\\|not a readable CTF trace" \
	"$NG_TMP/bad_event"
for j in 1 2; do
	note "bad event, -j $j"
	"$NG_BIN" analyze -j $j "$NG_TMP/bad_event" --json "$NG_TMP/bad.json" > "$NG_TMP/out" \
		2> "$NG_TMP/err" || fail "bad event -j $j: exit $?"
	assert_grep "channel0_0: [0-9]* implausible" "$NG_TMP/err"
	python3 - "$NG_TMP/bad.json" <<'PY' || fail "bad event -j $j: not in incomplete[]"
import json, sys
inc = json.load(open(sys.argv[1]))["incomplete"]
assert any(i["what"] == "events_implausible" and "channel0_0" in i["detail"] for i in inc), inc
PY
done

# valid CTF, no event in it
"$GEN" -o "$NG_TMP/noevents" --ranks 2 --iters 3
rm -f "$NG_TMP"/noevents/ust/uid/0/64-bit/channel0_*
expect_fail "no events" "no ncclguard events" "$NG_TMP/noevents"

# the unwritable output is an error too, after a good read
"$GEN" -o "$NG_TMP/good" --ranks 2 --iters 3
expect_fail "unwritable output" "cannot write" "$NG_TMP/good" --json /nonexistent/dir/r.json

note "a good trace still works"
"$NG_BIN" analyze "$NG_TMP/good" > "$NG_TMP/out" || fail "good trace: exit $?"
for f in report.json trace.json report.html; do
	[ -s "$NG_TMP/good/$f" ] || fail "default output $f missing"
done
assert_grep "Wrote: $NG_TMP/good/report.json" "$NG_TMP/out"

# One host's traces of a two-host job: the communicators have more ranks
# than the traces hold (the Chrome trace and the clock samples indexed
# past the traced members, a crash).
note "one host of a two-host job"
"$GEN" -o "$NG_TMP/half" --ranks 32 --hosts 2 --iters 4
"$NG_BIN" analyze "$NG_TMP/half/node0" > "$NG_TMP/out" 2> "$NG_TMP/err" ||
	fail "one host of two: exit $? ($(cat "$NG_TMP/err"))"
assert_grep "16 ranks on 1 host" "$NG_TMP/out"
assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$NG_TMP/err"
python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$NG_TMP/half/node0/trace.json" ||
	fail "one host of two: the Chrome trace is not JSON"

# More hosts than the clock correction once kept sums for (64): every host's
# clock error is measured and corrected.
note "66 hosts, each 1 ms further off"
"$GEN" -o "$NG_TMP/h66" --ranks 66 --hosts 66 --iters 40 --clock-error-ms 1
"$NG_BIN" analyze "$NG_TMP/h66" --json "$NG_TMP/h66.json" > "$NG_TMP/out" 2> "$NG_TMP/err" ||
	fail "66 hosts: exit $? ($(cat "$NG_TMP/err"))"
python3 - "$NG_TMP/h66.json" <<'PY' || fail "66 hosts: clock offsets wrong"
import json, sys
offs = json.load(open(sys.argv[1]))["clock_offsets"]
assert len(offs) == 66, len(offs)
for o in offs:
    if o["reference"]:
        continue
    k = int(o["host"][4:])          # nodeK: K ms ahead of node0
    assert o["samples"] > 0, o
    assert abs(o["offset_us"] + 1000 * k) < 50, o
PY
