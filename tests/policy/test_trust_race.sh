#!/bin/sh
# Another local user (uid 1001) swaps two folders under a world-writable,
# not sticky, folder above root's policy (renameat2 RENAME_EXCHANGE), one
# holding root's policy and one the attacker's (its own NCCL_DEBUG and an
# enforced LD_PRELOAD whose constructor leaves a mark), while root loads the
# policy: 10,000 times in-process as the shim does, then as guarded processes
# and `ncclguard policy check`.  The attacker must never win, and the loads
# must have met both folders, or the race was not run.  Made sticky, the
# folder keeps root's folder in place, and root's policy is taken.
# NCCLGUARD_RACE_TRIES, _RUNS and _CHECKS change the counts.
. "$NG_ROOT/tests/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to act as two users"; exit 0; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) not installed"; exit 0; }
RACE="$NG_BUILD/tests/policy/trust_race"
EVIL="$NG_BUILD/tests/policy/evil.so"
[ -x "$RACE" ] && [ -f "$EVIL" ] || fail "make $RACE $EVIL first"
TRIES=${NCCLGUARD_RACE_TRIES:-10000}
RUNS=${NCCLGUARD_RACE_RUNS:-500}
CHECKS=${NCCLGUARD_RACE_CHECKS:-200}
MARK=ATTACKER

# The attacker needs to reach its folders.
chmod 755 "$NG_TMP"
G="$NG_TMP/g"
mkdir "$G" && chmod 777 "$G"
mkdir -m 755 "$G/a" "$G/b" "$NG_TMP/evil" "$NG_TMP/marks"
printf '[env]\nNCCL_DEBUG = enforce WARN\n' >"$G/a/p.conf"
chmod 644 "$G/a/p.conf"
cp "$EVIL" "$NG_TMP/evil/evil.so"
printf '[env]\nNCCL_DEBUG = enforce %s\nLD_PRELOAD = enforce %s\n' "$MARK" \
	"$NG_TMP/evil/evil.so" >"$G/b/p.conf"
chmod 644 "$G/b/p.conf"
chown -R 1001:1001 "$G/b" "$NG_TMP/evil"
setpriv --reuid=1001 --regid=1001 --clear-groups true 2>/dev/null ||
	{ echo "SKIP: setpriv cannot switch to uid 1001 here"; exit 0; }
POL="$G/a/p.conf"
export NG_EVIL_MARKS="$NG_TMP/marks"

# start_attacker TAG: swap until $NG_TMP/stop.TAG exists.
start_attacker() {
	rm -f "$NG_TMP/stop.$1"
	setpriv --reuid=1001 --regid=1001 --clear-groups \
		"$RACE" swap "$G" a b "$NG_TMP/stop.$1" >"$NG_TMP/swaps.$1" 2>&1 &
	ATTACKER=$!
}
# stop_attacker TAG [WHAT]: WHAT (swaps, or failed) must be more than 0.
stop_attacker() {
	: >"$NG_TMP/stop.$1"
	wait "$ATTACKER"
	ATTACKER=
	cat "$NG_TMP/swaps.$1"
	n=$(awk -v w="${2:-swaps}" '{ for (i = 1; i < NF; i++) if ($i == w) print $(i + 1) }' \
		"$NG_TMP/swaps.$1")
	[ "${n:-0}" -gt 0 ] || fail "the attacker's ${2:-swaps}: none ($1)"
}
ATTACKER=
trap '[ -z "$ATTACKER" ] || kill "$ATTACKER" 2>/dev/null; wait; rm -rf "$NG_TMP"' EXIT
# A time limit's TERM must not leave the attacker swapping.
trap 'exit 1' INT TERM

# A number from the load line: field after WORD.
field() { awk -v w="$1" '{ for (i = 1; i < NF; i++) if ($i == w) { print $(i + 1); exit } }' \
	"$NG_TMP/load"; }

note "$TRIES loads in-process while uid 1001 swaps"
start=$(date +%s)
start_attacker load
"$RACE" load "$POL" "$TRIES" "$MARK" >"$NG_TMP/load"
stop_attacker load
cat "$NG_TMP/load"
echo "($(( $(date +%s) - start )) s)"
assert_eq "$(field wins)" 0 "attacker's policy accepted"
assert_eq "$(field tries)" "$TRIES" "tries"
# Every load read root's file or the attacker's, through folders the swap
# made untrusted: both must have happened, or nothing raced.
root=$(awk '{ sub(/.*root.s file /, ""); sub(/,.*/, ""); print }' "$NG_TMP/load")
att=$(awk '{ sub(/.*the attacker.s /, ""); sub(/\).*/, ""); print }' "$NG_TMP/load")
[ "$root" -gt 0 ] && [ "$att" -gt 0 ] ||
	fail "the race was not exercised: root's file $root times, the attacker's $att"
assert_eq "$(field accepted)" 0 "accepted under a folder others can write"

note "$RUNS guarded processes while uid 1001 swaps"
start=$(date +%s)
start_attacker run
refused=0 ok=0 won=0 other=0
i=0
while [ $i -lt "$RUNS" ]; do
	out=$(env NCCLGUARD_POLICY="$POL" LD_PRELOAD="$NG_PRELOAD" \
		sh -c 'echo "debug=${NCCL_DEBUG:-}"; /bin/true' 2>"$NG_TMP/run.err")
	rc=$?
	case "$rc:$out" in
	*"debug=$MARK"*) won=$((won + 1)) ;;
	3:) refused=$((refused + 1)) ;;
	0:debug=WARN) ok=$((ok + 1)) ;;
	*) other=$((other + 1)); echo "rc $rc: $out"; cat "$NG_TMP/run.err" ;;
	esac
	i=$((i + 1))
done
stop_attacker run
marks=$(ls "$NG_TMP/marks" | wc -l)
echo "runs $RUNS refused $refused accepted $ok wins $won other $other marks $marks" \
	"($(( $(date +%s) - start )) s)"
assert_eq "$won" 0 "processes that ran with the attacker's NCCL_DEBUG"
assert_eq "$marks" 0 "runs of the attacker's LD_PRELOAD"
assert_eq "$refused" "$RUNS" "processes refused (exit 3)"
assert_grep "policy violation: refusing .*writable by others" "$NG_TMP/run.err"

note "$CHECKS policy checks while uid 1001 swaps"
start=$(date +%s)
start_attacker check
refused=0 won=0 other=0
i=0
while [ $i -lt "$CHECKS" ]; do
	"$NG_BIN" policy check "$POL" >"$NG_TMP/check.out" 2>&1
	rc=$?
	if grep -q "$MARK" "$NG_TMP/check.out" && grep -q "^trust: ok" "$NG_TMP/check.out"; then
		won=$((won + 1))
	elif [ $rc = 3 ] && grep -q "^trust: REFUSED" "$NG_TMP/check.out"; then
		refused=$((refused + 1))
	else
		other=$((other + 1)); echo "rc $rc:"; cat "$NG_TMP/check.out"
	fi
	i=$((i + 1))
done
stop_attacker check
echo "checks $CHECKS refused $refused wins $won other $other ($(( $(date +%s) - start )) s)"
assert_eq "$won" 0 "checks that said trust: ok with the attacker's values"
assert_eq "$refused" "$CHECKS" "checks that refused"
note "the same folder made sticky: root's folder stays, and is trusted"
# Put root's folder back where the path names it, then make g like /tmp.
if [ "$(stat -c %u "$G/a")" != 0 ]; then
	mv "$G/a" "$G/t" && mv "$G/b" "$G/a" && mv "$G/t" "$G/b" || fail "cannot swap back"
fi
chmod 1777 "$G"
start_attacker sticky
"$RACE" load "$POL" 2000 "$MARK" >"$NG_TMP/load"
stop_attacker sticky failed
cat "$NG_TMP/load"
assert_eq "$(field wins)" 0 "attacker's policy accepted (sticky)"
assert_eq "$(field accepted)" 2000 "root's policy accepted in a sticky folder"
echo ok
