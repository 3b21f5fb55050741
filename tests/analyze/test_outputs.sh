#!/bin/sh
# Outputs replace only regular files: a FIFO, a device, a symlink or a
# directory given as --json/--chrome/--html is refused before the trace is
# read (exit 1, "not a regular file"), left as it was, and no temporary
# file is left behind; a folder we cannot write in is an error too.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
O="$NG_TMP/out"
mkdir -p "$O"
"$GEN" -o "$NG_TMP/t" --ranks 2 --iters 4 || fail "gen"

no_temp() {
	left=$(ls -A "$1" | grep '\.tmp\.' || true)
	[ -z "$left" ] || fail "$2: temporary files left in $1: $left"
}

# refuse NAME PATH FLAG: exit 1, the path's kind named, nothing left
refuse() {
	name=$1 path=$2 flag=$3
	note "$name ($flag)"
	timeout 30 "$NG_BIN" analyze "$NG_TMP/t" "$flag" "$path" > "$NG_TMP/stdout" 2> "$NG_TMP/err"
	rc=$?
	cat "$NG_TMP/err"
	[ "$rc" = 1 ] || fail "$name: exit $rc, expected 1"
	assert_grep "not a regular file" "$NG_TMP/err"
	assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$NG_TMP/err"
	no_temp "$(dirname "$path")" "$name"
}

mkfifo "$O/fifo" || fail "mkfifo"
for flag in --json --chrome --html; do
	refuse "a FIFO" "$O/fifo" "$flag"
	[ -p "$O/fifo" ] || fail "the FIFO was replaced"
done

# A character device: made with mknod as root (the /dev/null of the bug
# report, without touching the real one), else /dev/null itself.
if [ "$(id -u)" = 0 ] && mknod "$O/null" c 1 3 2>/dev/null; then
	dev="$O/null"
else
	dev=/dev/null
fi
refuse "a character device" "$dev" --chrome
[ -c "$dev" ] || fail "$dev is no longer a character device"
[ "$dev" = /dev/null ] || rm -f "$dev"

echo keep > "$O/target"
ln -s "$O/target" "$O/link"
refuse "a symlink to a file" "$O/link" --json
[ -L "$O/link" ] || fail "the symlink was replaced"
assert_eq "$(cat "$O/target")" keep "the symlink's target"
ln -s "$O/nowhere" "$O/dangling"
refuse "a dangling symlink" "$O/dangling" --html
[ ! -e "$O/nowhere" ] || fail "a dangling symlink was followed"

mkdir "$O/dir"
refuse "a directory" "$O/dir" --json
[ -d "$O/dir" ] && [ -z "$(ls -A "$O/dir")" ] || fail "the directory was changed"

# Refused before reading: with a corrupt trace the output is the error.
cp -r "$NG_TMP/t" "$NG_TMP/bad"
printf '\377%.0s' $(seq 1 64) | dd of="$NG_TMP/bad/ust/uid/0/64-bit/channel0_0" bs=1 \
	seek=400 conv=notrunc 2>/dev/null
"$NG_BIN" analyze "$NG_TMP/bad" --json "$O/fifo" > /dev/null 2> "$NG_TMP/err"
assert_eq "$?" 1 "corrupt trace, FIFO output: exit"
assert_grep "not a regular file" "$NG_TMP/err"
assert_no_grep "corrupt\|not a readable" "$NG_TMP/err"

note "a regular file is replaced, 0644 under umask 022"
echo old > "$O/r.json"
chmod 600 "$O/r.json"
(umask 022 && "$NG_BIN" analyze "$NG_TMP/t" --json "$O/r.json" > /dev/null) ||
	fail "regular file: exit $?"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$O/r.json" || fail "not JSON"
assert_eq "$(stat -c %a "$O/r.json")" 644 "mode of the report"
(umask 077 && "$NG_BIN" analyze "$NG_TMP/t" --json "$O/new.json" > /dev/null) ||
	fail "new file: exit $?"
assert_eq "$(stat -c %a "$O/new.json")" 600 "mode under umask 077"
no_temp "$O" "regular file"

note "a folder we cannot write in"
mkdir "$O/ro"
chmod 555 "$O/ro"
if [ "$(id -u)" = 0 ]; then
	# root writes anywhere: run as nobody, the trace readable to it
	if command -v setpriv > /dev/null; then
		chmod 755 "$NG_TMP" "$O"
		chmod -R a+rX "$NG_TMP/t"
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$NG_BIN" analyze "$NG_TMP/t" --json "$O/ro/r.json" > /dev/null 2> "$NG_TMP/err"
		rc=$?
	else
		rc=skip
	fi
else
	"$NG_BIN" analyze "$NG_TMP/t" --json "$O/ro/r.json" > /dev/null 2> "$NG_TMP/err"
	rc=$?
fi
if [ "$rc" != skip ]; then
	cat "$NG_TMP/err"
	assert_eq "$rc" 1 "read-only folder: exit"
	assert_grep "cannot write $O/ro/r.json" "$NG_TMP/err"
	[ -z "$(ls -A "$O/ro")" ] || fail "read-only folder: files left: $(ls -A "$O/ro")"
fi
chmod 755 "$O/ro"
echo "outputs: ok"
