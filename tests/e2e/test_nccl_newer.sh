#!/bin/sh
# NCCL 2.29's and 2.30's calls under `ncclguard run` on the CPU backend
# (tests/e2e/api_job.c; NCCLSIM_VERSION plays the NCCL):
#   grow      2 ranks grow to 4: every member's comm_init_end carries the
#             same hash (NCCL's, from the profiler plugin), ident nccl;
#             the analyzer sees one comm of 4 with its all-reduce matched;
#             without the plugin the two halves cannot be matched: the
#             grow_unjoined entry, and no hang
#   shrink    4 -> 3, its all-reduce matched
#   suspend   a collective between suspend and resume is refused with
#             ncclInvalidUsage, warned of once, recorded; no hang; a call
#             left open while suspended is no timeout
#   signals   put/signal + waitsignal rounds complete and are recorded (a
#             wait on two peers with its descriptors); a
#             wait with no signal is named by the watchdog with its peer;
#             an injected error on op=waitsignal reaches the program
#   params    the parameter API and memory stats: what the backend says
#             reaches the program unchanged
#   growold   NCCL 2.28: ncclCommGrow fails with ncclInvalidUsage, the
#             shim stays quiet, the init is recorded as failed
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/e2e/api_job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
command -v python3 >/dev/null || fail "python3 not installed"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_HEALTH_INTERVAL=0
export NCCLSIM_VERSION=23007
unset NCCLGUARD_VERIFY NCCLGUARD_INJECT

cat >"$NG_TMP/ranks.sh" <<'SH'
J=$1 ID=$2 N=$3; shift 3
i=0 pids=
while [ $i -lt "$N" ]; do RANK=$i WORLD_SIZE=$N "$J" "$ID" "$@" & pids="$pids $!"; i=$((i + 1)); done
s=0; for p in $pids; do wait "$p" || s=1; done
exit $s
SH

# job NAME NRANKS MODE [RUN OPTIONS]: the job under run; its exit status
# in NAME.rc, its trace's text in NAME.txt, the analysis in NAME.json.
job() {
	_n=$1 _k=$2 _m=$3; shift 3
	_rc=0
	timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/$_n" "$@" -- sh "$NG_TMP/ranks.sh" "$JOB" \
		"$NG_TMP/$_n.id" "$_k" "$_m" >"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" || _rc=$?
	echo "$_rc" >"$NG_TMP/$_n.rc"
	ng_trace_text "$NG_TMP/$_n" "$NG_TMP/$_n.txt"
	"$NG_BIN" analyze "$NG_TMP/$_n" --json "$NG_TMP/$_n.json" >"$NG_TMP/$_n.sum" 2>&1 ||
		{ cat "$NG_TMP/$_n.sum"; fail "analyze $_n failed"; }
}
ok() { [ "$(cat "$NG_TMP/$1.rc")" = 0 ] || { cat "$NG_TMP/$1.out" "$NG_TMP/$1.err"; fail "job $1 exited $(cat "$NG_TMP/$1.rc")"; }; }

# comms FILE: the comm_init_end lines of kind grow, "HASH IDENT PARENT".
grow_ends() {
	grep 'comm_init_end:' "$1" | grep 'kind = "grow"' |
		sed 's/.*comm_hash = \(0x[0-9A-F]*\), parent_hash = \(0x[0-9A-F]*\),.*ident = "\([a-z]*\)".*/\1 \3 \2/'
}

note "grow 2 -> 4, with the profiler plugin: NCCL's hash on every member"
job grow 4 grow
ok grow
assert_eq "$(grep -c 'grown allreduce returned 0' "$NG_TMP/grow.out")" 4 "grown all-reduces"
grow_ends "$NG_TMP/grow.txt" >"$NG_TMP/grow.ends"
assert_eq "$(wc -l <"$NG_TMP/grow.ends")" 4 "grow comm_init_end events"
assert_eq "$(cut -d' ' -f1,2 "$NG_TMP/grow.ends" | sort -u | wc -l)" 1 "distinct (hash, ident) of the grown comm"
assert_grep " nccl " "$NG_TMP/grow.ends"
assert_eq "$(grep -c ' 0x0$' "$NG_TMP/grow.ends")" 2 "joiners without a parent"
assert_grep "2 collectives matched" "$NG_TMP/grow.sum"
python3 - "$NG_TMP/grow.json" <<'PY' || fail "grow: the all-reduce of 4 matched"
import json, sys
r = json.load(open(sys.argv[1]))
rows = {(c["op"], c["nranks"]): c["calls"] for c in r["collectives"]}
assert rows == {("allreduce", 2): 1, ("allreduce", 4): 1}, rows
assert not r["hangs"], r["hangs"]
assert not [i for i in r["incomplete"] if i["what"] == "grow_unjoined"], r["incomplete"]
PY
# Every event of the new kinds read as plausible.
assert_grep '"incomplete"' "$NG_TMP/grow.json"
assert_no_grep events_implausible "$NG_TMP/grow.json"

note "grow without the plugin: two halves, said, and no hang"
NCCL_PROFILER_PLUGIN=none job growlocal 4 grow
ok growlocal
grow_ends "$NG_TMP/growlocal.txt" >"$NG_TMP/growlocal.ends"
assert_eq "$(grep -c ' local ' "$NG_TMP/growlocal.ends")" 4 "grow ends named by the local rule"
assert_eq "$(cut -d' ' -f1 "$NG_TMP/growlocal.ends" | sort -u | wc -l)" 2 "halves of the grown comm"
python3 - "$NG_TMP/growlocal.json" <<'PY' || fail "grow without the plugin: grow_unjoined"
import json, sys
r = json.load(open(sys.argv[1]))
inc = [i for i in r["incomplete"] if i["what"] == "grow_unjoined"]
assert len(inc) == 1 and "NCCL_PROFILER_PLUGIN=libncclguard.so" in inc[0]["detail"], r["incomplete"]
assert not r["hangs"], r["hangs"]
PY
assert_no_grep events_implausible "$NG_TMP/growlocal.json"

note "a nonblocking grow: named locally (NCCL's init comes after the call), no hang"
job grownb 4 grownb
ok grownb
assert_eq "$(grep -c 'grown allreduce returned 0' "$NG_TMP/grownb.out")" 4 "grown all-reduces"
grow_ends "$NG_TMP/grownb.txt" >"$NG_TMP/grownb.ends"
assert_eq "$(grep -c ' local ' "$NG_TMP/grownb.ends")" 8 "grow ends (in progress, then ready) named locally"
python3 - "$NG_TMP/grownb.json" <<'PY' || fail "nonblocking grow: grow_unjoined, no hang"
import json, sys
r = json.load(open(sys.argv[1]))
assert [i["what"] for i in r["incomplete"]] == ["grow_unjoined"], r["incomplete"]
assert not r["hangs"], r["hangs"]
PY

note "shrink 4 -> 3"
job shrink 4 shrink
ok shrink
assert_eq "$(grep -c 'shrunk allreduce returned 0' "$NG_TMP/shrink.out")" 3 "shrunk all-reduces"
python3 - "$NG_TMP/shrink.json" <<'PY' || fail "shrink: the all-reduce of 3 matched"
import json, sys
r = json.load(open(sys.argv[1]))
rows = {(c["op"], c["nranks"]): c["calls"] for c in r["collectives"]}
assert rows == {("allreduce", 4): 1, ("allreduce", 3): 1}, rows
assert not r["hangs"], r["hangs"]
PY

note "suspend: a collective between suspend and resume refused"
job suspend 2 suspend
ok suspend
assert_eq "$(grep -c 'suspended allreduce returned 5' "$NG_TMP/suspend.out")" 2 "refused all-reduces"
assert_eq "$(grep -c 'suspended stat 1' "$NG_TMP/suspend.out")" 2 "ncclStatGpuMemSuspended while suspended"
assert_eq "$(grep -c 'resumed allreduce returned 0' "$NG_TMP/suspend.out")" 4 "all-reduces after the resume"
assert_eq "$(grep -c 'refused (ncclInvalidUsage): the communicator is suspended by ncclCommSuspend; call ncclCommResume first' \
	"$NG_TMP/suspend.err")" 2 "warnings, one per rank"
for st in suspended refused resumed; do
	assert_eq "$(grep -c "comm_state:.*state = \"$st\"" "$NG_TMP/suspend.txt")" 2 "comm_state $st events"
done
assert_grep 'state = "refused", op = "allreduce", flags = 0, result = 5' "$NG_TMP/suspend.txt"
assert_grep "3 collectives matched" "$NG_TMP/suspend.sum"
python3 - "$NG_TMP/suspend.json" <<'PY' || fail "suspend: no hang"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["hangs"] and not r["timeouts"], (r["hangs"], r["timeouts"])
PY

note "suspend on the CPU backend alone: the collective fails, loudly"
sh "$NG_TMP/ranks.sh" "$JOB" "$NG_TMP/plain.id" 2 suspend >"$NG_TMP/plain.out" 2>&1 ||
	{ cat "$NG_TMP/plain.out"; fail "suspend without the shim"; }
assert_eq "$(grep -c 'suspended allreduce returned 3' "$NG_TMP/plain.out")" 2 "ncclInternalError from the backend"
assert_grep "suspended allreduce: AllReduce on a suspended communicator: it touched memory that ncclCommSuspend released" \
	"$NG_TMP/plain.out"

note "suspended with a call open: the watchdog (1 s) waits it out"
job suspendopen 2 suspendopen --timeout 1 --on-timeout exit
ok suspendopen
assert_no_grep "not complete after" "$NG_TMP/suspendopen.err"
assert_eq "$(grep -c 'suspendopen returned 0' "$NG_TMP/suspendopen.out")" 2 "ranks done"

note "signals: put and signal met by a wait, three rounds"
job signals 2 signals
ok signals
assert_eq "$(grep -c 'signals returned 0' "$NG_TMP/signals.out")" 2 "ranks done"
for op in putsignal signal waitsignal; do
	assert_eq "$(grep -c "coll_enqueue:.*op = \"$op\"" "$NG_TMP/signals.txt")" 3 "$op events"
done
assert_grep 'op = "waitsignal", count = 2, datatype = 1, bytes = 2, root_or_peer = 0' "$NG_TMP/signals.txt"
python3 - "$NG_TMP/signals.json" <<'PY' || fail "signals: no hang"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["hangs"], r["hangs"]
PY

note "a wait on two peers: its descriptors recorded"
job signals3 3 signals
ok signals3
assert_eq "$(grep -c 'signals returned 0' "$NG_TMP/signals3.out")" 3 "ranks done"
assert_eq "$(grep -c 'coll_enqueue:.*op = "waitsignal", count = 3, datatype = 1, bytes = 3, root_or_peer = -1' \
	"$NG_TMP/signals3.txt")" 3 "waits on two peers"
assert_eq "$(grep -c 'signal_wait:.*ndesc = 2, peer = 0, op_cnt = 2, sig_idx = 0' "$NG_TMP/signals3.txt")" 3 \
	"descriptors of peer 0"
assert_eq "$(grep -c 'signal_wait:.*ndesc = 2, peer = 2, op_cnt = 1, sig_idx = 1' "$NG_TMP/signals3.txt")" 3 \
	"descriptors of peer 2"
for n in suspend signals signals3; do
	assert_no_grep events_implausible "$NG_TMP/$n.json"
done
python3 - "$NG_TMP/signals3.json" <<'PY' || fail "signals3: no hang"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["hangs"], r["hangs"]
PY

note "a wait whose signal never comes: the watchdog names it, with its peer"
export NCCLGUARD_DUMP_DIR="$NG_TMP/dumps"
mkdir -p "$NCCLGUARD_DUMP_DIR"
job nosignal 2 nosignal --timeout 1 --on-timeout exit --inject "drop:rank=0,op=signal"
assert_grep "injecting drop into signal seq 2" "$NG_TMP/nosignal.err"
assert_grep "waitsignal seq 1 on comm [0-9a-f]* (2 ranks, 2 B) not complete after" "$NG_TMP/nosignal.err"
assert_grep "hang: waitsignal p2p seq 1 on comm [0-9a-f]* never completed: rank 1 waiting for rank 0, which posted only 1 of the 2 signals to it; timed out" \
	"$NG_TMP/nosignal.sum"
python3 - "$NG_TMP/nosignal.json" "$NCCLGUARD_DUMP_DIR" <<'PY' || fail "nosignal: the hang and its dump"
import glob, json, os, sys
r = json.load(open(sys.argv[1]))
h = r["hangs"]
assert len(h) == 1 and h[0]["op"] == "waitsignal" and h[0]["missing_ranks"] == [0], h
dumps = glob.glob(os.path.join(sys.argv[2], "ncclguard-hang-rank1-*.json"))
assert len(dumps) == 1, dumps
d = json.load(open(dumps[0]))
assert [(i["op"], i["peer_or_root"]) for i in d["inflight"]] == [("waitsignal", 0)], d["inflight"]
PY
unset NCCLGUARD_DUMP_DIR

note "an injected error on op=waitsignal reaches the program"
job sigerr 2 signals --inject "error:rank=1,op=waitsignal,code=ncclRemoteError"
assert_grep "injecting error" "$NG_TMP/sigerr.err"
assert_grep "signals returned 6" "$NG_TMP/sigerr.out"

note "params and memory stats: the backend's values, unchanged through the shim"
for m in params memstats; do
	NCCL_SOCKET_IFNAME=lo9 RANK=0 WORLD_SIZE=1 "$JOB" "$NG_TMP/$m.plain.id" $m \
		>"$NG_TMP/$m.plain" 2>"$NG_TMP/$m.plain.err" || fail "$m without the shim"
	NCCL_SOCKET_IFNAME=lo9 RANK=0 WORLD_SIZE=1 LD_PRELOAD="$NG_PRELOAD" \
		"$JOB" "$NG_TMP/$m.shim.id" $m >"$NG_TMP/$m.shim" 2>"$NG_TMP/$m.shim.err" ||
		fail "$m with the shim"
	diff "$NG_TMP/$m.plain" "$NG_TMP/$m.shim" || fail "$m: the shim changed what the program saw"
done
assert_grep "param NCCL_SOCKET_IFNAME returned 0: lo9 (3)" "$NG_TMP/params.shim"
assert_grep "i64 returned 0: 4194304" "$NG_TMP/params.shim"
assert_grep "i8 returned 4" "$NG_TMP/params.shim"
assert_grep "ncclsim: NCCL_SOCKET_IFNAME=lo9" "$NG_TMP/params.shim.err"
assert_grep "stat 1 returned 0: 0" "$NG_TMP/memstats.shim"

note "NCCL 2.28: ncclCommGrow is not there"
NCCLSIM_VERSION=22809 job growold 2 growold
ok growold
assert_eq "$(grep -c 'grow returned 5' "$NG_TMP/growold.out")" 2 "grows refused by NCCL 2.28"
assert_eq "$(grep -c 'after allreduce returned 0' "$NG_TMP/growold.out")" 2 "all-reduces after"
assert_no_grep "ncclguard\[.*[Gg]row" "$NG_TMP/growold.err"
assert_eq "$(grep 'comm_init_end:' "$NG_TMP/growold.txt" | grep -c 'result = 5, .*kind = "grow"')" 2 "failed grow inits"
python3 - "$NG_TMP/growold.json" <<'PY' || fail "growold: no hang"
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["hangs"], r["hangs"]
PY

note "no sanitizer report from any job (a SANITIZE= build)"
for f in "$NG_TMP"/*.err "$NG_TMP"/*.out; do
	assert_no_grep "AddressSanitizer\|runtime error" "$f"
done

echo "api: all ok"
