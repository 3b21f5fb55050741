#!/bin/sh
# The rendezvous against strangers on its port (fake_peer.py plays them):
#  - a listener that accepts and never answers: the rank gives up after
#    --timeout (and slack), not after the whole run's bound;
#  - a second HELLO for a rank that has one: neither is measured, the
#    pair fails naming both addresses, exit status 1;
#  - ESC and BEL in what a peer sends (a host name, a reason, a BYE):
#    printed escaped, never raw;
#  - --token-file: a HELLO without the secret is refused and takes no
#    slot; a file others can read is refused before the run; --local
#    without it makes a secret of its own for its ranks.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/matrix/common.sh"

cd "$NG_TMP" || fail "no $NG_TMP"
PEER="python3 $NG_ROOT/tests/matrix/fake_peer.py"
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; }
trap 'cleanup; rm -rf "$NG_TMP"' EXIT
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# serve NAME MODE [TEXT]: a fake coordinator in the background; its
# port in $port.
serve() {
	rm -f "$1.port"
	$PEER serve "$1.port" "$2" "${3:-}" </dev/null >/dev/null &
	pids="$pids $!"
	i=0
	while [ ! -s "$1.port" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	port=$(cat "$1.port")
}
# no_raw FILE: no control byte but newline in FILE.
no_raw() {
	if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$1"; then
		echo "--- $1:"; od -c "$1" | head -20
		fail "raw control characters in $1"
	fi
}
rank1() { env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 "$NG_BIN" matrix $SMALL "$@"; }

note "a coordinator that accepts and never answers"
serve silent silent
start=$(date +%s)
rc=0
timeout -k 5 150 env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 "$NG_BIN" matrix $SMALL --timeout 5 \
	--rendezvous "127.0.0.1:$port" -o silent >silent.out 2>silent.err || rc=$?
took=$(( $(date +%s) - start ))
cat silent.out silent.err
echo "gave up after $took s"
assert_eq "$rc" 1 "exit status"
assert_grep "rank 1: the coordinator stopped answering (nothing for 7 s)" silent.err
# --timeout 5 and slack; the run's whole bound (59 s) is no answer.
[ "$took" -lt 30 ] || fail "a silent coordinator held the rank $took s"

note "a coordinator whose BYE holds ESC and BEL"
serve bye bye "$(printf 'you are \033]0;owned\007out')"
rc=0
rank1 --timeout 5 --rendezvous "127.0.0.1:$port" -o bye >bye.out 2>bye.err || rc=$?
cat bye.out bye.err
assert_eq "$rc" 1 "exit status"
no_raw bye.err
assert_grep 'rank 1: refused: you are \\x1b]0;owned\\aout' bye.err

note "rank 1 claimed twice: by a stranger first, then by rank 1"
port=$(free_port)
# --timeout: joining stays open while the stranger's Python starts.
launch claim 1 WORLD_SIZE=2 -- "$NG_BIN" matrix $SMALL --timeout 15 --rendezvous "127.0.0.1:$port" -o claim
$PEER hello "$port" 'HELLO 1 2 - stranger - -' >rogue.out &
rogue=$!
pids="$pids $rogue"
i=0
while ! grep -q WELCOME rogue.out && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
assert_grep "^WELCOME 1" rogue.out
rc=0
rank1 --timeout 15 --rendezvous "127.0.0.1:$port" -o claim >claim.1.out 2>claim.1.err || rc=$?
wait_ranks claim 1 90
wait "$rogue"
cat rogue.out claim.1.out claim.1.err
show_rank claim 0
from=$(sed -n 's/^addr //p' rogue.out)
assert_eq "$rc" 1 "rank 1's exit status"
assert_eq "$(rc_of claim 0)" 1 "rank 0's exit status"
# Both sides of the claim are told, and the run names both addresses.
assert_grep "^BYE rank 1 was claimed twice, from $from and from 127\.0\.0\.1:[0-9]*: " rogue.out
assert_grep "rank 1: refused: rank 1 was claimed twice, from $from and from 127\.0\.0\.1:[0-9]*: neither is measured" claim.1.err
assert_grep "^  0-1  rank 1 was claimed twice, from $from and from 127\.0\.0\.1:[0-9]*: neither is measured" claim.0.out
assert_grep "^1 pair: 0 measured, 1 failed, 0 slow$" claim.0.out
check_json claim/matrix.json 2 | grep -q "^failed 0-1 rank 1 was claimed twice, from $from and" ||
	fail "matrix.json does not name the claim"

note "a rank whose host name and reason hold ESC and BEL"
port=$(free_port)
launch esc 1 WORLD_SIZE=2 -- "$NG_BIN" matrix $SMALL --timeout 15 --rendezvous "127.0.0.1:$port" -o esc
$PEER hello "$port" 'HELLO 1 2 - %1B[31mevil%07host - -' 'BROKEN no %1B]0;owned%07GPU' >peer.out
wait_ranks esc 1 90
show_rank esc 0
assert_eq "$(rc_of esc 0)" 1 "rank 0's exit status"
no_raw esc.0.out
no_raw esc.0.err
assert_grep '^  h1 \\x1b\[31mevil\\ahost: ranks 1$' esc.0.out
assert_grep '^  0-1  rank 1 cannot take part: no \\x1b\]0;owned\\aGPU$' esc.0.out

note "--token-file: a HELLO without the secret takes no slot"
umask 077
head -c 24 /dev/urandom | base64 >secret
port=$(free_port)
launch tok 1 WORLD_SIZE=2 -- "$NG_BIN" matrix $SMALL --timeout 20 --token-file secret \
	--rendezvous "127.0.0.1:$port" -o tok
$PEER hello "$port" 'HELLO 1 2 - stranger - -' >none.out
$PEER hello "$port" 'HELLO 1 2 - stranger - wrong-secret-of-24-bytes' >wrong.out
$PEER hello "$port" "HELLO 1 2 - stranger - $(cut -c 2- secret)" >short.out
for f in none wrong short; do
	cat $f.out
	assert_grep "^BYE wrong token (--token-file)$" $f.out
done
rc=0
rank1 --timeout 20 --token-file secret --rendezvous "127.0.0.1:$port" -o tok >tok.1.out 2>tok.1.err || rc=$?
wait_ranks tok 1 90
show_rank tok 0
cat tok.1.err
assert_eq "$rc" 0 "rank 1's exit status"
assert_eq "$(rc_of tok 0)" 0 "rank 0's exit status"
assert_grep "^1 pair: 1 measured, 0 failed, 0 slow$" tok.0.out
assert_grep "refused a rank 1 from 127\.0\.0\.1:[0-9]*: wrong or no --token-file secret" tok.0.err

note "--token-file with --local"
rc=0
timeout -k 5 120 "$NG_BIN" matrix --local 2 $SMALL --timeout 5 --token-file secret -o loc \
	>loc.out 2>loc.err || rc=$?
cat loc.out loc.err
assert_eq "$rc" 0 "exit status"
assert_grep "^1 pair: 1 measured, 0 failed, 0 slow$" loc.out

note "--local without --token-file: a secret of its own"
# Rank 1 stalls in its first all-reduce, which holds the run for the
# coordinator's result bound: time for a stranger on the loopback port.
LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_LOG=quiet NCCLGUARD_INJECT="stall:rank=1,op=allreduce" \
	timeout -k 5 120 "$NG_BIN" matrix --local 2 $SMALL --timeout 2 -o own >own.out 2>own.err &
parent=$!
pids="$pids $parent"
conn=""
i=0
while [ -z "$conn" ] && [ $i -lt 300 ]; do
	for c in $(pgrep -P "$(pgrep -P $parent | head -n 1)" 2>/dev/null) $(pgrep -P $parent); do
		conn=$(tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | sed -n 's/^NCCLGUARD_MATRIX_CONNECT=//p')
		[ -n "$conn" ] && break
	done
	[ -n "$conn" ] || sleep 0.1
	i=$((i + 1))
done
[ -n "$conn" ] || fail "no rank of --local found"
$PEER hello "${conn#*:}" 'HELLO 1 2 - stranger - -' >own.peer
cat own.peer
assert_grep "^BYE wrong token (--token-file)$" own.peer
rc=0
wait $parent || rc=$?
cat own.out own.err
assert_eq "$rc" 1 "exit status"
assert_grep "^1 pair: 0 measured, 1 failed, 0 slow$" own.out
assert_no_grep "claimed twice" own.out

note "a secret others can read, or too short, is refused before the run"
chmod 644 secret
rc=0
rank1 --token-file secret -o open >open.out 2>open.err || rc=$?
cat open.err
assert_eq "$rc" 2 "exit status"
assert_grep "secret: mode 644 lets others read or change the secret (chmod 600 it)" open.err
printf 'short\n' >short
chmod 600 short
rc=0
rank1 --token-file short -o open >open.out 2>open.err || rc=$?
cat open.err
assert_eq "$rc" 2 "exit status"
assert_grep "short: the first line must hold a secret of at least 16" open.err
echo ok
