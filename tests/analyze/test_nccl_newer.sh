#!/bin/sh
# What the analyzer makes of NCCL 2.29's calls, on scripted traces
# (tests/analyze/gen.c): a comm left suspended at the end is not blamed
# for the collective a rank left open on it (the same trace without the
# suspend is a hang); a grown comm named by the shim's own rule is an
# incomplete[] grow_unjoined; a put and a signal meet a wait of two
# signals; a wait whose second signal never came is a hang that names
# its peer; a wait on several peers (peer -1) pairs with nothing and
# breaks nothing.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
cd "$NG_TMP" || exit 1
command -v python3 >/dev/null || fail "python3 not installed"

an() {
	n=$1; shift
	"$NG_BIN" analyze "$@" --json "$n.json" >"$n.txt" 2>"$n.err" || { cat "$n.txt" "$n.err"; fail "analyze $n"; }
	assert_no_grep "ERROR: AddressSanitizer\|runtime error" "$n.err"
}
nhangs() { python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['hangs']))" "$1"; }
gen() { "$GEN" -o "$1" --ranks 2 --script "$2" || fail "gen $1"; }

# Two ranks on comm aaa: seq 1 runs; rank 1 enters seq 2, rank 0 never
# does; the trace ends 3 s later.  SUSPEND: rank 0 suspended aaa first.
base() {
	for r in 0 1; do
		echo "$r 0 proc $r 2"
		echo "$r 10 initb aaa 2 $r"
		echo "$r 20 inite aaa 2 $r"
		echo "$r 105 enq aaa 1 0 allreduce 1024 -1 2 0 100"
		echo "$r 200 done aaa 1 0 allreduce 1024 110 190 2 -1"
	done
	[ "$1" = suspend ] && echo "0 300 state aaa suspended 1"
	echo "1 405 enq aaa 2 0 allreduce 1024 -1 2 0 400"
	echo "0 3000000 state aaa $([ "$1" = suspend ] && echo suspended || echo resumed) 1"
}

note "a collective left open on a comm suspended at the end: no hang"
base none >open.in
gen open open.in
an open open
assert_eq "$(nhangs open.json)" 1 "hangs without the suspend"
base suspend >susp.in
gen susp susp.in
an susp susp
assert_eq "$(nhangs susp.json)" 0 "hangs on the suspended comm"
# Resumed before the end: the open call is a hang again.
{ base suspend | sed '$d'; echo "0 2000000 state aaa resumed 0"; } >resumed.in
gen resumed resumed.in
an resumed resumed
assert_eq "$(nhangs resumed.json)" 1 "hangs once resumed"

note "a grown comm named by the local rule"
{
	for r in 0 1; do
		echo "$r 0 proc $r 2"
		echo "$r 10 grow bbb 4 $r local"
	done
} >grow.in
gen grow grow.in
an grow grow
python3 - grow.json <<'PY' || fail "grow_unjoined"
import json, sys
inc = [i for i in json.load(open(sys.argv[1]))["incomplete"] if i["what"] == "grow_unjoined"]
assert len(inc) == 1 and "joining ranks cannot be matched" in inc[0]["detail"], inc
PY
sed 's/ local$/ nccl/' grow.in >growok.in
gen growok growok.in
an growok growok
assert_no_grep grow_unjoined growok.json

# Rank 0 puts and signals to rank 1 (p2p seqs 1, 2), rank 1 waits for
# both in one wait (count 2) and, with MISSING, for one more that never
# comes (p2p seq 2).  A send/recv pair before them still matches.
sig() {
	for r in 0 1; do
		echo "$r 0 proc $r 2"
		echo "$r 10 initb ccc 2 $r"
		echo "$r 20 inite ccc 2 $r"
	done
	echo "0 105 enq ccc 0 1 putsignal 64 1 2 0 100"
	echo "0 115 enq ccc 0 2 signal 0 1 2 0 110"
	echo "0 125 enq ccc 0 3 send 64 1 2 0 120"
	echo "1 105 enq ccc 0 1 waitsignal 8 0 2 0 100"
	echo "1 125 enq ccc 0 2 recv 64 0 2 0 120"
	echo "1 130 enq ccc 0 3 waitsignal 8 -1 2 0 128"
	echo "1 131 sigwait ccc 3 0 2"
	[ "$1" = missing ] && echo "1 205 enq ccc 0 4 waitsignal 4 0 2 0 200"
	echo "0 3000000 done ccc 0 3 send 64 130 140 2 1"
	echo "1 3000000 done ccc 0 3 waitsignal 8 130 140 2 -1"
}

note "a put and a signal met by one wait of two"
sig none >sig.in
gen sig sig.in
an sig sig
assert_eq "$(nhangs sig.json)" 0 "hangs of matched signals"

note "a wait whose signal never came names its peer"
sig missing >sigmiss.in
gen sigmiss sigmiss.in
an sigmiss sigmiss
assert_eq "$(nhangs sigmiss.json)" 1 "hangs of a missing signal"
assert_grep "hang: waitsignal p2p seq 4 on comm 0000000000000ccc never completed: rank 1 waiting for rank 0, which posted only 2 of the 3 signals to it" sigmiss.txt
echo "ok"
