#!/bin/sh
# The provider library on its own (no shim, no NCCL): tp_emit loads
# libncclguard-tp.so mid-run from a second thread, as the shim does, and
# emits N events of each kind under `ncclguard run`; the trace holds
# exactly N of each, every field as sent, with vpid/vtid/procname.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"

note "the library exports its ops table and nothing else"
nm -D --defined-only "$NG_TP_LIB" | awk '{print $3}' >"$NG_TMP/syms"
assert_eq "$(cat "$NG_TMP/syms")" "ncclguard_tp_ops" "exported symbols"
note "the shim itself does not link LTTng"
if ldd "$NG_LIB" | grep -q lttng; then fail "libncclguard.so links LTTng"; fi

N=25
note "ncclguard run -- tp_emit -n $N (provider opened 200 ms into the run)"
"$NG_BIN" run -o "$NG_TMP/trace" -- "$NG_TP_EMIT" -n $N -s 200 \
	>"$NG_TMP/out" 2>"$NG_TMP/err" || { cat "$NG_TMP/out" "$NG_TMP/err"; fail "run failed"; }
cat "$NG_TMP/err"
assert_grep "recording into $NG_TMP/trace" "$NG_TMP/err"
assert_grep "(0 events lost)" "$NG_TMP/err"
assert_grep "enabled=1" "$NG_TMP/out"
pid=$(ng_emit_pid "$NG_TMP/out")
[ -n "$pid" ] || fail "tp_emit printed no pid"
[ -f "$NG_TMP/trace/$(hostname)/ust/uid/$(id -u)/64-bit/metadata" ] ||
	{ find "$NG_TMP/trace"; fail "no per-host, per-UID trace under $NG_TMP/trace"; }

ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"
ng_assert_all "$NG_TMP/text" "$pid" $N

note "fields"
T="$NG_TMP/text"
one() { grep "ncclguard:$1: .*vpid = $pid," "$T" | grep -- "$2" | head -n 1; }
need() { [ -n "$(one "$1" "$2")" ] || { grep "ncclguard:$1:" "$T" | head -n 2; fail "$1 lacks: $2"; }; }
need process_info 'procname = "tp_emit"'
need process_info 'vtid = [0-9]'
need process_info 'host = "emit-host", pid = '"$pid"', rank = 24, local_rank = 0, world_size = 25, nccl_version = 22703, nccl_path = "/x/libnccl.so.2", cudart_version = 13000, driver_version = 13000, gpu_pci_bus_id = "0000:1B:00.0", numa_node = -1, cpu_affinity = "0-1", socket_ifname = "lo", env = "NCCL_DEBUG=WARN;NCCL_IB_DISABLE=1", policy_path = "", policy_digest = "", rank_source = "torchrun"'
need comm_init_begin 'comm_hash = 0xABCDEF0123456789, parent_hash = 0x0, nranks = 4, rank = 1, cuda_dev = 0, result = -1, duration_ns = 0, kind = "initrank", comm_index = 3, blocking = 1'
need comm_init_end 'result = 0, duration_ns = 12345, kind = "initrank"'
need comm_end 'comm_hash = 0xABCDEF0123456789, kind = "destroy", result = 0'
need coll_enqueue 'comm_hash = 0xABCDEF0123456789, seq = 7, p2p_seq = 0, op = "allreduce", count = 1024, datatype = 7, bytes = 4096, root_or_peer = -1, stream = 0x7F00DEAD, group_depth = 0, captured = 0, result = 0, nranks = 4, redop = 0, enter_ns = 7000, exit_ns = 7500'
need coll_complete 'comm_hash = 0xABCDEF0123456789, seq = 0, p2p_seq = 25, op = "send", bytes = 8192, stream = 0x7F00DEAD, gpu_start_ns = 50000, gpu_end_ns = 50700, duration_ns = 700, nranks = 4, root_or_peer = 2'
need timeout 'seq = 1, op = "allgather", waited_ns = 5000000000, action = "warn", what = "collective"'
need policy 'key = "NCCL_SOCKET_IFNAME", action = "enforce", user_value = "eth0", effective_value = "ib0"'
need inject 'kind = "delay", comm_hash = 0xABCDEF0123456789, seq = 2, op = "allreduce", detail = "ms=50"'
need callsite 'seq = 3, frames = "train_step+0x12 (train.so);main+0x40 (python3)"'
need coll_algo 'op = "allreduce", op_seq = [0-9]*, bytes = 4096, algo = "RING", proto = "LL", nchannels = 2, nwarps = 16, nranks = 4, plugin_only = 1'
need comm_state 'comm_hash = 0xABCDEF0123456789, state = "refused", op = "waitsignal", flags = 0, result = 5'
need signal_wait 'comm_hash = 0xABCDEF0123456789, p2p_seq = [0-9]*, desc = 1, ndesc = 2, peer = 3, op_cnt = 4, sig_idx = 5, ctx = 6'

note "sequence numbers 1..$N in order"
grep "ncclguard:coll_enqueue: .*vpid = $pid," "$T" | sed 's/.* seq = \([0-9]*\),.*/\1/' >"$NG_TMP/seqs"
seq 1 $N >"$NG_TMP/want"
cmp -s "$NG_TMP/seqs" "$NG_TMP/want" || fail "coll_enqueue seqs are not 1..$N"

note "events emitted right after loading are kept, also from 4 processes at once"
# Each process waits in dlopen until the daemon has set up its buffers
# (LTTNG_UST_REGISTER_TIMEOUT, which run sets); without that wait a short
# job registers with the daemon but records nothing.
env -u LTTNG_UST_REGISTER_TIMEOUT "$NG_BIN" run -o "$NG_TMP/burst" -- sh -c \
	"for i in 1 2 3 4; do '$NG_TP_EMIT' -n 3 & done; wait" >"$NG_TMP/bout" 2>"$NG_TMP/berr" ||
	{ cat "$NG_TMP/bout" "$NG_TMP/berr"; fail "burst run failed"; }
ng_trace_text "$NG_TMP/burst" "$NG_TMP/btext"
assert_eq "$(grep -c '^tp_emit pid=.* enabled=1' "$NG_TMP/bout")" 4 "emitters that saw the session"
for p in $(sed -n 's/^tp_emit pid=\([0-9]*\) .*/\1/p' "$NG_TMP/bout"); do
	ng_assert_all "$NG_TMP/btext" "$p" 3
done

note "a second run into the same directory is refused; the job does not run"
rc=0
"$NG_BIN" run -o "$NG_TMP/trace" -- touch "$NG_TMP/ran" 2>"$NG_TMP/err2" || rc=$?
assert_eq "$rc" 2 "exit status when DIR holds a trace"
assert_grep "already holds a trace" "$NG_TMP/err2"
[ ! -e "$NG_TMP/ran" ] || fail "the command ran"
echo "ok"
