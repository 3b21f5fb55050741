#!/bin/sh
# `ncclguard watch` and the hosts' hardware evidence: three hosts
# (namespaces streaming live sessions to one lttng-relayd), the hung job
# of common.sh on hosta and hostb (rank 3, on hostb, leaves out the last
# all-reduce), and what a sampler writes, emitted by hw_emit on each
# host: on hostb its start, a NIC port's link_downed +1 and a saturated
# symbol_error; on hosta an Xid (and a GPU whose Xids cannot be read); on
# hostc, where no rank of the job runs, a link_downed +1.  watch prints
# each change as it comes (a temperature only in --json), says what
# hosta's sampler cannot read, and names in the hang's line (and in
# --json's hang record) the changes on hostb first, then hosta's, never
# hostc's.  Text: the changes come while the job runs; --json: before it.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EMIT="$NG_BUILD/tests/hw_emit"
[ -x "$NG_BUILD/bin/allreduce_example" ] && [ -f "$NG_SIM/libnccl.so.2" ] ||
	{ echo "SKIP: CPU backend not built"; exit 0; }
[ -x "$EMIT" ] || fail "$EMIT not built"
ng_relayd_start "$NG_TMP/relay"
for h in hosta hostb hostc; do ng_host_up $h; done

# emit JOBID: each host's sampler events, hostc's first, hosta's last
# (a device whose unseen is empty after one whose is not: read as empty).
emit() {
	_job=$1
	for h in hostc hostb hosta; do
		case $h in
		hostc) set -- "change,mlx5_0/1,link_downed,0,1,0" ;;
		hostb) set -- "sample,start" "device,mlx5_2/1,ib," \
			"change,mlx5_2/1,link_downed,0,1,0" \
			"change,mlx5_2/1,symbol_error,65530,65535,1" \
			"change,0000:1a:00.0,temperature_c,60,85,0" ;;
		hosta) set -- "device,0000:1a:00.0,gpu,xid: events refused here" \
			"device,0000:1b:00.0,gpu," "change,0000:1a:00.0,xid,0,79,0" ;;
		esac
		ng_on $h env NCCLGUARD_JOB="$_job" NCCLGUARD_TP_LIBRARY="$NG_TP_LIB" "$EMIT" "$@" \
			>"$NG_TMP/emit.$h" 2>&1 || { cat "$NG_TMP/emit.$h"; fail "hw_emit on $h"; }
	done
}
# sessions N: a live session on each host, named ncclguard-HN-$$.
sessions() {
	for h in hosta hostb hostc; do ng_live_session $h "ncclguard-$h$1-$$"; done
}
attached() {
	for h in hosta hostb hostc; do ng_until_grep "attached to .*ncclguard-$h$1" "$2" "$3"; done
}

# The jobs' own samplers are off (NCCLGUARD_HEALTH_INTERVAL=0): the
# hardware events here are hw_emit's alone.
note "text: changes as they come, the hang's line names those of its hosts"
sessions 1
"$NG_BIN" watch "$NG_RELAY_URL" --stuck 3 --every 1 >"$NG_TMP/watch.txt" 2>"$NG_TMP/watch.err" &
WATCH=$!
NG_AT_EXIT="kill $WATCH 2>/dev/null; $NG_AT_EXIT"
attached 1 "$NG_TMP/watch.txt" $WATCH
ng_hang_job t "hw-text-$$" NCCLGUARD_TIMEOUT=never NCCLGUARD_HEALTH_INTERVAL=0
emit "hw-text-$$"
# the changes may come after the hang was first said: its later lines
ng_until_grep '^  [Hh][Aa][Nn][Gg] .*Xid 79' "$NG_TMP/watch.txt" $WATCH
kill "$WATCH"
rc=0; wait "$WATCH" || rc=$?
cat "$NG_TMP/watch.txt" "$NG_TMP/watch.err"
assert_eq "$rc" 5 "watch's status after reporting a hang"
for l in "hostb mlx5_2/1 link_downed 0 -> 1 +1" \
	"hostb mlx5_2/1 symbol_error 65530 -> 65535 +5 saturated" \
	"hosta 0000:1a:00.0 Xid 79" "hostc mlx5_0/1 link_downed 0 -> 1 +1"; do
	assert_grep "^\[[0-9:.]*\] hardware: host $l\$" "$NG_TMP/watch.txt"
done
! grep -q temperature_c "$NG_TMP/watch.txt" || fail "a level printed in text"
assert_grep "^host hosta: hardware evidence lacks: xid: events refused here (0000:1a:00.0)\$" \
	"$NG_TMP/watch.txt"
[ "$(grep -c 'hardware evidence lacks' "$NG_TMP/watch.txt")" = 1 ] || fail "unseen said twice"
hang=$(grep '^  [Hh][Aa][Nn][Gg] .*Xid 79' "$NG_TMP/watch.txt" | tail -n 1)
echo "$hang" | grep -q "missing: rank 3 (hostb).*; near it: host hostb mlx5_2/1 [a-z_]* +[15]" ||
	fail "hang line: $hang"
for w in "host hostb mlx5_2/1 link_downed +1 at [0-9:.]* ([0-9.]* s [a-z]*)" \
	"host hostb mlx5_2/1 symbol_error +5 saturated at" \
	", host hosta 0000:1a:00.0 Xid 79 at [0-9:.]* ([0-9.]* s [a-z]*)\$"; do
	echo "$hang" | grep -q "$w" || fail "hang line without '$w': $hang"
done
! grep '^  [Hh][Aa][Nn][Gg] ' "$NG_TMP/watch.txt" | grep -q hostc || fail "hostc in a hang line"
for h in hosta hostb hostc; do ng_on $h lttng destroy -a >/dev/null; done

note "--json: the changes before the job, in the hang record"
sessions 2
"$NG_BIN" watch "$NG_RELAY_URL" --json --stuck 3 --every 1 --job "hw-json-$$" \
	>"$NG_TMP/watch.json" 2>"$NG_TMP/watch.jerr" &
WJ=$!
NG_AT_EXIT="kill $WJ 2>/dev/null; $NG_AT_EXIT"
attached 2 "$NG_TMP/watch.json" $WJ
emit "hw-json-$$"
ng_until_grep '"type": "hardware", "host": "hosta"' "$NG_TMP/watch.json" $WJ
ng_hang_job j "hw-json-$$" NCCLGUARD_TIMEOUT=never NCCLGUARD_HEALTH_INTERVAL=0
ng_until_grep '"type": "hang"' "$NG_TMP/watch.json" $WJ
for h in hosta hostb hostc; do ng_on $h lttng destroy -a >/dev/null; done
ng_until_gone "$WJ" "$NG_TMP/watch.json"
rc=0; wait "$WJ" || rc=$?
cat "$NG_TMP/watch.jerr"
assert_eq "$rc" 5 "watch --json's status after a hang"
python3 - "$NG_TMP/watch.json" <<'PY' || { cat "$NG_TMP/watch.json"; fail "watch --json"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
hw = {(l["host"], l["device"], l["counter"]): l for l in lines if l["type"] == "hardware"}
print("hardware:", sorted(hw))
assert len(hw) == 5, hw
ld = hw[("hostb", "mlx5_2/1", "link_downed")]
assert ld["kind"] == "count" and (ld["before"], ld["after"]) == (0, 1) and ld["evidence"], ld
assert ld["time"] > 1e9 and not ld["saturated"] and not ld["reset"], ld
assert hw[("hostb", "mlx5_2/1", "symbol_error")]["saturated"]
t = hw[("hostb", "0000:1a:00.0", "temperature_c")]
assert t["kind"] == "level" and not t["evidence"], t
x = hw[("hosta", "0000:1a:00.0", "xid")]
assert x["kind"] == "event" and x["after"] == 79 and x["evidence"], x
un = [l for l in lines if l["type"] == "hardware_unseen"]
assert un == [{"type": "hardware_unseen", "host": "hosta",
               "unseen": [{"device": "0000:1a:00.0", "what": "xid: events refused here"}]}], un
hang = [l for l in lines if l["type"] == "hang"]
assert len(hang) == 1, hang
near = hang[0]["hang"]["hardware"]
print("near:", json.dumps(near))
assert [(n["host"], n["counter"], n["hosts_of"]) for n in near][2:] == \
    [("hosta", "xid", "waiting")], near
assert sorted((n["host"], n["counter"], n["hosts_of"]) for n in near[:2]) == \
    [("hostb", "link_downed", "missing"), ("hostb", "symbol_error", "missing")], near
assert all(n["offset_s"] < 0 for n in near), near
assert hang[0]["hang"]["hardware_sampled_hosts"] == ["hostb"], hang
prog = [l for l in lines if l["type"] == "progress" and l["hangs"]]
assert prog and prog[-1]["hangs"][0]["hardware"] == near, prog[-1]
PY
echo PASS
