#!/bin/sh
# Flight folders left by runs that died with their guardian (a whole
# cgroup killed) would hold tmpfs memory until reboot: the next run
# removes a folder whose launcher is gone and whose files nobody holds,
# and leaves one that a live process still holds.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
command -v flock >/dev/null || { echo "SKIP: no flock(1)"; exit 0; }
P=$(ng_rundir)
mkdir -p "$P" && chmod 700 "$P"
dead=$(sh -c 'echo $$')
stale="$P/00000000000000aa-$dead-abcdef"
held="$P/00000000000000bb-$dead-ghijkl"
mkdir -m 700 "$stale" "$held"
echo x >"$stale/1.ring"
echo x >"$held/2.ring"
flock "$held/2.ring" sleep 30 &
holder=$!
# Held once flock has the lock, however long it takes to start.
i=0
while flock -n "$held/2.ring" true && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
! flock -n "$held/2.ring" true || fail "flock did not take the lock"
"$NG_BIN" run -o "$NG_TMP/t" -- true >"$NG_TMP/out" 2>"$NG_TMP/err" || { cat "$NG_TMP/err"; fail "run failed"; }
[ ! -e "$stale" ] || fail "stale flight folder $stale left"
[ -e "$held/2.ring" ] || fail "a held flight folder was removed"
assert_grep "removed $stale, left by a run that died with its guardian (1 flight ring file never collected)" "$NG_TMP/err"
kill $holder 2>/dev/null
wait $holder 2>/dev/null
rm -rf "$held"
echo ok
