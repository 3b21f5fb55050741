#!/bin/sh
# Hardware evidence (docs/hardware.md): the host sampler's counter changes
# in report.json's hardware[], each with the ranks that use its device,
# and a `hardware` finding only for a change on a device of a rank in
# trouble within that trouble's window, or an Xid.  Synthetic traces of 4
# ranks over two hosts (ng_trace_gen --hw): each host has two GPUs under
# two PCIe switches, an IB port under each switch (the NIC nearest each
# GPU), a third IB port on another root complex and an eth1 no rank uses.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
cd "$NG_TMP" || exit 1

# js FILE EXPR: a Python expression on report.json `r`
js() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
# an NAME ARGS...: analyze NAME's trace into NAME.txt and NAME.json; its
# exit status in NAME.rc
an() {
	n=$1
	shift
	"$NG_BIN" analyze "$n" --quiet --json "$n.json" --html "$n.html" "$@" >"$n.txt" 2>"$n.err"
	echo $? >"$n.rc"
}
# devices HOST...: the sampler's start and its devices on each host
devices() {
	for h in "$@"; do
		p=/sys/devices/pci0000:17/0000:17
		cat <<-EOD
		$h S-40 sample start
		$h S-40 device 0000:1b:00.0 gpu 0 $p:00.0/0000:18:00.0/0000:19:00.0/0000:1b:00.0
		$h S-40 device 0000:3b:00.0 gpu 0 $p:02.0/0000:38:00.0/0000:39:00.0/0000:3b:00.0
		$h S-40 device mlx5_0/1 ib 0 $p:00.0/0000:18:00.0/0000:19:01.0/0000:1c:00.0
		$h S-40 device mlx5_1/1 ib 0 $p:02.0/0000:38:00.0/0000:39:01.0/0000:3c:00.0
		$h S-40 device mlx5_2/1 ib 1 /sys/devices/pci0000:a0/0000:a0:00.0/0000:a1:00.0
		$h S-40 device eth1 eth 1 /sys/devices/pci0000:a0/0000:a0:00.0/0000:a1:00.1
		EOD
	done
}
# finding NAME: the hardware findings' summaries, one a line
finding() { js "$1.json" '"\n".join(f["summary"] for f in r["findings"] if f["kind"] == "hardware")'; }

note "rank 2's NIC goes down 1 s before a hang in which rank 2 is missing"
{
	devices 0 1
	echo "1 A-30.5 change mlx5_0/1 link_error_recovery 0 1"	# before the window
	echo "1 A-1 change mlx5_0/1 link_downed 0 1"
	echo "1 A-0.5 change mlx5_0/1 port_rcv_errors 65530 65535 1"	# saturated
	echo "0 A-0.8 change mlx5_2/1 symbol_error 3 40"		# no rank's NIC
	echo "0 A-0.7 change eth1 rx_dropped 10 12"		# no rank's either
	echo "1 A+5.5 change mlx5_0/1 port_xmit_discards 0 4"	# after the trace's end
	echo "0 A+6 sample end"
	echo "1 A+6 sample end"
} >hang.hw
"$GEN" -o hang --ranks 4 --hosts 2 --iters 20 --skip-last 2 --hw hang.hw || fail "gen hang"
an hang --fail-on hardware
assert_eq "$(cat hang.rc)" 5 "--fail-on hardware with a hardware finding"
f=$(finding hang)
printf '%s\n' "$f" >hang.f
assert_eq "$(printf '%s\n' "$f" | wc -l)" 1 "one hardware finding"
assert_grep "likely cause: host node1's mlx5_0 port 1 went down and up (link_downed +1) at" hang.f
assert_grep "1.00 s before allreduce seq 20 stalled; rank 2 uses that NIC" hang.f
assert_grep "also near it: node1's mlx5_0 port 1 has port_rcv_errors saturated at 65535" hang.f
for c in link_error_recovery port_xmit_discards symbol_error rx_dropped mlx5_2 eth1; do
	assert_no_grep "$c" hang.f
done
assert_eq "$(js hang.json '[(f["ranks"], f["hosts"], f["severity"]) for f in r["findings"] if f["kind"] == "hardware"]')" \
	"[([2], ['node1'], 'error')]" "the finding's ranks, hosts and severity"
# every change is listed, with its ranks, in time order
assert_eq "$(js hang.json '" ".join("%s:%s:%s:%s" % (c["host"], c["device"], c["counter"], c["ranks"]) for c in r["hardware"])')" \
	"node1:mlx5_0/1:link_error_recovery:[2] node1:mlx5_0/1:link_downed:[2] node0:mlx5_2/1:symbol_error:[] node0:eth1:rx_dropped:[] node1:mlx5_0/1:port_rcv_errors:[2] node1:mlx5_0/1:port_xmit_discards:[2]" \
	"hardware[]"
assert_eq "$(js hang.json '[c.get("saturated", False) for c in r["hardware"]]')" \
	"[False, False, False, False, True, False]" "saturated only where flagged"
assert_grep "hang: allreduce seq 20" hang.txt
assert_grep "likely cause: host node1's mlx5_0 port 1" hang.txt
assert_grep "^Hardware (6 counter changes on 2 sampled hosts)" hang.txt
assert_grep "node1 mlx5_0/1 port_rcv_errors 65530 -> 65535 (saturated)  ranks 2" hang.txt
# one graph or several workers: the same report
"$NG_BIN" analyze hang -j 1 --quiet --json hang1.json >/dev/null 2>&1
cmp -s hang.json hang1.json || fail "-j 1 and -j N reports differ"
NCCLGUARD_ANALYZE_MUXER=1 "$NG_BIN" analyze hang --quiet --json hangm.json >/dev/null 2>&1
cmp -s hang.json hangm.json || fail "babeltrace2's muxer and our merge give other reports"

note "an Xid on rank 1's GPU in a healthy job: a finding, no hang; noise is none"
{
	devices 0 1
	echo "1 S-40 device 0000:1b:00.0 gpu 0 - Xid events: nvmlDeviceRegisterEvents: Not Supported"
	echo "0 S+0.01 change 0000:3b:00.0 xid 0 79"
	echo "1 S+0.02 change eth1 rx_dropped 0 7"
	echo "1 S+0.02 change mlx5_1/1 symbol_error 65535 65535 5"	# saturated at start
	echo "1 S+0.03 change 0000:1b:00.0 temperature_c 60 85"	# a level: never a finding
	echo "0 A+1 sample end"
} >xid.hw
"$GEN" -o xid --ranks 4 --hosts 2 --iters 20 --hw xid.hw || fail "gen xid"
an xid --fail-on hardware
assert_eq "$(cat xid.rc)" 5 "--fail-on hardware with an Xid"
finding xid >xid.f
assert_eq "$(wc -l <xid.f)" 1 "one hardware finding"
assert_grep "hardware: host node0's GPU 0000:3b:00.0 raised Xid 79 at .*, near no hang, timeout or straggler; rank 1 uses that GPU" xid.f
assert_no_grep "hang:" xid.txt
assert_eq "$(js xid.json '[(f["ranks"], f["severity"]) for f in r["findings"] if f["kind"] == "hardware"]')" \
	"[([1], 'error')]" "the Xid's ranks and severity"
assert_eq "$(js xid.json '[(c["counter"], c.get("saturated", False), c.get("at_start", False)) for c in r["hardware"] if c["host"] == "node1"]')" \
	"[('rx_dropped', False, False), ('symbol_error', True, True), ('temperature_c', False, False)]" \
	"node1's changes"
# what the samplers could not see
assert_eq "$(js xid.json '" ".join(i["what"] for i in r["incomplete"])')" \
	"hw_unseen hw_sampler_died" "incomplete[]"
assert_grep "host node1, 0000:1b:00.0: Xid events: nvmlDeviceRegisterEvents: Not Supported" xid.json
assert_grep "host node1: the hardware sampler started and never wrote its end" xid.json

note "noise alone near no trouble: hardware[] only, no finding"
{
	devices 0 1
	echo "1 S+0.02 change mlx5_0/1 symbol_error 1 9"
	echo "0 S+0.02 change mlx5_1/1 port_rcv_errors 0 2"
	echo "0 A+1 sample end"
	echo "1 A+1 sample end"
} >noise.hw
"$GEN" -o noise --ranks 4 --hosts 2 --iters 20 --hw noise.hw || fail "gen noise"
an noise --fail-on hardware
assert_eq "$(cat noise.rc)" 0 "--fail-on hardware without a finding"
assert_eq "$(finding noise)" "" "no hardware finding"
assert_eq "$(js noise.json 'len(r["hardware"])')" 2 "both changes listed"
assert_eq "$(js noise.json 'r["incomplete"]')" "[]" "nothing unseen"

note "NVLink replays on rank 1's GPU while rank 1 straggles; edges of its window"
{
	devices 0
	echo "0 S-31 change 0000:3b:00.0/link2 nvlink_crc 0 1"	# before the window
	echo "0 S+0.05 change 0000:3b:00.0/link2 nvlink_replay 0 5"
	echo "0 A+4.9 change 0000:3b:00.0/link3 nvlink_recovery 0 1"	# inside, at the end
	echo "0 A+5.5 change 0000:3b:00.0/link4 nvlink_state 1 0"	# after it
	echo "0 A+6 sample end"
} >strag.hw
"$GEN" -o strag --ranks 4 --hosts 2 --iters 40 --slow-rank 1 --slow-ms 5 --hw strag.hw ||
	fail "gen strag"
an strag
assert_grep "straggler: rank 1" strag.txt
finding strag >strag.f
assert_eq "$(wc -l <strag.f)" 1 "one hardware finding"
assert_grep "likely cause: host node0's NVLink 2 of GPU 0000:3b:00.0 logged errors (nvlink_replay +5) at .*, .* after straggler rank 1's first late call; rank 1 uses that NVLink" strag.f
assert_grep "also near it: node0's NVLink 3 of GPU 0000:3b:00.0 logged errors (nvlink_recovery +1)" strag.f
assert_no_grep "nvlink_crc\|nvlink_state\|link4" strag.f
assert_eq "$(js strag.json '" ".join(i["what"] for i in r["incomplete"])')" "hw_host_unsampled" \
	"a host with ranks and no sampler"
assert_grep "host node1 has ranks and no hardware sampler" strag.json

note "a watchdog's timeout: from its wait's start minus 30 s to the timeout"
{
	devices 0 1
	echo "0 A-30.5 change mlx5_0/1 symbol_error 0 3"	# before the window
	echo "0 A-29.5 change 0000:1b:00.0 remap_pending 0 1"
	echo "0 A+4.5 change mlx5_0/1 link_downed 2 3"
	echo "0 A+5.5 change mlx5_0/1 port_rcv_errors 0 1"	# after the timeout
	echo "1 A+4.5 change mlx5_0/1 link_downed 0 1"	# rank 2's: not in trouble
	echo "0 A+10 sample end"
	echo "1 A+10 sample end"
} >tmo.hw
"$GEN" -o tmo --ranks 4 --hosts 2 --iters 20 --warn-timeout 10 --hw tmo.hw || fail "gen tmo"
an tmo
assert_no_grep "hang:" tmo.txt
finding tmo >tmo.f
assert_eq "$(wc -l <tmo.f)" 1 "one hardware finding"
assert_grep "likely cause: host node0's GPU 0000:1b:00.0 changed state (remap_pending 0 -> 1) at .*, 29.50 s before rank 0's allreduce seq 10 began the wait its watchdog timed out; rank 0 uses that GPU; also near it: node0's mlx5_0 port 1 went down and up (link_downed +1)" tmo.f
assert_no_grep "symbol_error\|port_rcv_errors\|node1" tmo.f

note "the HTML report lists the changes, laid out like the other tables"
assert_grep '<section id="hardware"><h2>Hardware counter changes' hang.html
assert_grep "<td>link_downed</td><td>0</td><td>1</td>" hang.html
assert_grep "saturated: later rises unseen" hang.html
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	python3 "$NG_ROOT/tests/analyze/check_html.py" hang.html \
		--sections findings,hangs,timeouts,hardware,ranks \
		--verdict-has "hang" || fail "hang.html: rendered page wrong"
fi
