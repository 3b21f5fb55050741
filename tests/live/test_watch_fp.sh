#!/bin/sh
# `ncclguard watch` and the ranks' output fingerprints: 4 ranks (0-1 on
# hosta, 2-3 on hostb, namespaces streaming live sessions to one
# lttng-relayd), each a process that writes its process_info and the
# fingerprints a rank's watchdog would (hw_emit), in turn: on a comm of
# the 4, seqs 1023, 2047 and 3071, where rank 2's hash at 2047 differs,
# and 4095 of rank 0 alone; on a comm of ranks 0 and 1, seq 1023, where
# the two differ.  watch prints one line per mismatch, naming rank 2 on
# the first, saying there is no majority on the second, nothing for the
# healthy calls, and counts 4 calls compared, 2 mismatched, and in its
# last report, which compares what still waits, 1 unpaired; --json the
# same as data_mismatch records and the progress record's verification[].
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EMIT="$NG_BUILD/tests/hw_emit"
[ -x "$EMIT" ] || fail "$EMIT not built"
ng_relayd_start "$NG_TMP/relay"
for h in hosta hostb; do ng_host_up $h; done

BIG=0x3fa2000000000001
PAIR=0x9c41e7d25b803f16
SLICES=0+1024,4096+1024,65536+1024,1047552+1024

# emit_job JOBID: each rank's events, one process per rank, rank 3 first.
emit_job() {
	_job=$1
	for r in 3 2 1 0; do
		h=hosta; [ $r -ge 2 ] && h=hostb
		set -- "proc,$r,4"
		for s in 1023 2047 3071; do
			hash=0x1111; [ $r = 2 ] && [ $s = 2047 ] && hash=0x2222
			set -- "$@" "fp,$BIG,$s,allreduce,4,1048576,4096,$hash,$SLICES"
		done
		[ $r -lt 2 ] && set -- "$@" "fp,$PAIR,1023,allreduce,2,1048576,4096,0xaaa$r,$SLICES"
		[ $r = 0 ] && set -- "$@" "fp,$BIG,4095,allreduce,4,1048576,4096,0x1111,$SLICES"
		ng_on $h env NCCLGUARD_JOB="$_job" NCCLGUARD_TP_LIBRARY="$NG_TP_LIB" "$EMIT" "$@" \
			>"$NG_TMP/emit.$r" 2>&1 || { cat "$NG_TMP/emit.$r"; fail "hw_emit of rank $r"; }
	done
}
sessions() {
	for h in hosta hostb; do ng_live_session $h "ncclguard-$h$1-$$"; done
}
attached() {
	for h in hosta hostb; do ng_until_grep "attached to .*ncclguard-$h$1" "$2" "$3"; done
}

note "text: the rank that differs, no majority, the counts"
sessions 1
"$NG_BIN" watch "$NG_RELAY_URL" --every 1 >"$NG_TMP/watch.txt" 2>"$NG_TMP/watch.err" &
WATCH=$!
NG_AT_EXIT="kill $WATCH 2>/dev/null; $NG_AT_EXIT"
attached 1 "$NG_TMP/watch.txt" $WATCH
emit_job "fp-text-$$"
ng_until_grep "^  verified outputs: 4 calls compared, 2 mismatched" "$NG_TMP/watch.txt" $WATCH
kill "$WATCH"
rc=0; wait "$WATCH" || rc=$?
cat "$NG_TMP/watch.txt" "$NG_TMP/watch.err"
assert_eq "$rc" 0 "watch's status after data mismatches, stopped"
assert_grep "^data mismatch: comm 3fa2000000000001 all-reduce seq 2047 (1 MiB, 4 KiB compared): rank 2 (hostb) differs from ranks 0, 1, 3\$" \
	"$NG_TMP/watch.txt"
assert_grep "^data mismatch: comm 9c41e7d25b803f16 all-reduce seq 1023 (1 MiB, 4 KiB compared): no majority: rank 0 (hosta) holds one output, rank 1 (hosta) another; the check cannot tell which is wrong\$" \
	"$NG_TMP/watch.txt"
assert_eq "$(grep -c '^data mismatch:' "$NG_TMP/watch.txt")" 2 "data mismatch lines"
assert_grep "verified outputs: 4 calls compared, 2 mismatched (comm 3fa2000000000001: 1 of 3, comm 9c41e7d25b803f16: 1 of 1)" \
	"$NG_TMP/watch.txt"
# the last report compares what still waits: seq 4095, of rank 0 alone
assert_eq "$(grep 'verified outputs' "$NG_TMP/watch.txt" | tail -n 1 | sed 's/.*, //')" \
	"1 unpaired" "the last report's count"
assert_grep "^ncclguard watch: stopped; 0 hangs reported; 2 data mismatches\$" "$NG_TMP/watch.txt"
for h in hosta hostb; do ng_on $h lttng destroy -a >/dev/null; done

note "--json: data_mismatch records, verification[] in progress"
sessions 2
"$NG_BIN" watch "$NG_RELAY_URL" --json --every 1 --job "fp-json-$$" \
	>"$NG_TMP/watch.json" 2>"$NG_TMP/watch.jerr" &
WJ=$!
NG_AT_EXIT="kill $WJ 2>/dev/null; $NG_AT_EXIT"
attached 2 "$NG_TMP/watch.json" $WJ
emit_job "fp-json-$$"
ng_until_grep '"verification": \[[^]]*"compared": 1, "mismatched": 1' "$NG_TMP/watch.json" $WJ
ng_until_grep '"verification": \[[^]]*"compared": 3, "mismatched": 1' "$NG_TMP/watch.json" $WJ
for h in hosta hostb; do ng_on $h lttng destroy -a >/dev/null; done
ng_until_gone "$WJ" "$NG_TMP/watch.json"
rc=0; wait "$WJ" || rc=$?
cat "$NG_TMP/watch.jerr"
assert_eq "$rc" 0 "watch --json's status after data mismatches"
python3 - "$NG_TMP/watch.json" <<'PY' || { cat "$NG_TMP/watch.json"; fail "watch --json"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
dm = {l["comm_hash"]: l for l in lines if l["type"] == "data_mismatch"}
print("data_mismatch:", json.dumps(dm))
assert len([l for l in lines if l["type"] == "data_mismatch"]) == 2, lines
big = dm["0x3fa2000000000001"]
assert (big["seq"], big["op"], big["bytes"], big["compared"]) == (2047, "allreduce", 1048576, 4096), big
assert big["ranks"] == [2] and big["hosts"] == ["hostb"] and big["majority"], big
assert big["groups"] == [[0, 1, 3], [2]], big
pair = dm["0x9c41e7d25b803f16"]
assert pair["seq"] == 1023 and pair["ranks"] == [0, 1] and not pair["majority"], pair
assert pair["groups"] == [[0], [1]], pair
prog = [l for l in lines if l["type"] == "progress"][-1]
ver = {v["comm_hash"]: v for v in prog["verification"]}
assert ver["0x3fa2000000000001"]["compared"] == 3, ver
assert ver["0x3fa2000000000001"]["mismatched"] == 1, ver
assert ver["0x9c41e7d25b803f16"]["compared"] == 1, ver
assert {v["comm_hash"]: v["unpaired"] for v in prog["verification"]} == \
    {"0x3fa2000000000001": 1, "0x9c41e7d25b803f16": 0}, prog
assert prog["verification_dropped"] == {"over_comms": 0, "late": 0, "unidentified": 0,
                                        "evicted": 0}, prog
end = lines[-1]
assert end["type"] == "end" and end["data_mismatches"] == 2, end
PY
echo PASS
