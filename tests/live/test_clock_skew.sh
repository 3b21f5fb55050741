#!/bin/sh
# The analyzer's alignment across hosts, on a real skew: two hosts
# (namespaces, a session daemon and hostname each) record one 4-rank job,
# ranks 0-1 on hosta, 2-3 on hostb, rank 3 delayed 20 ms before every
# call.  On hostb the ranks read LTTng's clock through a clock plugin
# (LTTNG_UST_CLOCK_PLUGIN, tests/live/clock_skew.c) running 250 ms ahead,
# so hostb's events, and the times they carry, are 250 ms late on the
# epoch, as on a host whose clock is off.  Recorded once with the plugin
# at 0 ms and once at 250 ms:
#   - the skew is in the trace (hostb's events 250 ms after hosta's);
#   - the report states the offsets it estimated (hostb 250 ms ahead,
#     or 0 without the skew), within 2 ms plus the spread of one
#     collective's ends between two ranks of one host in that run;
#   - the stragglers are the same (rank 3 alone, about 20 ms late);
#   - the Chrome trace is the same: every rank's GPU slice of a
#     collective where it is without the skew (next to the others').
# The CPU backend's ranks end a collective milliseconds apart on a loaded
# machine, on one host too, and the analyzer judges the offset by those
# ends: the margins grow by the spread the runs show where no clock is
# corrected.  The exact checks, on a recorded trace with a 250 ms skew,
# are test_golden's (two_hosts) and test_analyze_core's.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
PLUGIN="$NG_BUILD/tests/libng_clock_skew.so"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
[ -f "$PLUGIN" ] || fail "$PLUGIN not built"

ng_host_up hosta
ng_host_up hostb

# record SKEW_MS: the job into $NG_TMP/sSKEW/{hosta,hostb}, analysed.
record() {
	d="$NG_TMP/s$1"
	ng_local_session hosta "skew$1" "$d/hosta"
	ng_local_session hostb "skew$1" "$d/hostb"
	for r in 0 1 2 3; do
		h=hosta; plug=""
		[ $r -ge 2 ] && h=hostb plug="LTTNG_UST_CLOCK_PLUGIN=$PLUGIN NG_CLOCK_SKEW_MS=$1"
		# shellcheck disable=SC2086
		ng_rank $h "j$1" $r 4 LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" \
			NCCLGUARD_JOB="skew-$$" NCCLGUARD_INJECT=delay:ms=20,rank=3 $plug \
			-- "$EXAMPLE" --id-file "$NG_TMP/id.$1" --max-bytes 1K --warmup 2 --iters 20
	done
	wait_ranks "j$1" 4 120
	for r in 0 1 2 3; do
		[ "$(rc_of "j$1" $r)" = 0 ] || { show_rank "j$1" $r; fail "skew $1: rank $r failed"; }
	done
	ng_on hosta lttng destroy -a >/dev/null
	ng_on hostb lttng destroy -a >/dev/null
	"$NG_BIN" analyze "$d" --json "$d/report.json" --chrome "$d/chrome.json" \
		>"$d/summary.txt" 2>"$d/err" || { cat "$d/err"; fail "skew $1: analyze"; }
	cat "$d/summary.txt"
	# Each seq's first completion on each host, as recorded: "seq time".
	for h in hosta hostb; do
		babeltrace2 "$d/$h" |
			sed -n 's/^\[\([0-9:.]*\)\].* ncclguard:coll_complete: .* seq = \([0-9]*\),.*/\2 \1/p' |
			awk '!seen[$1]++' >"$d/ends.$h"
	done
}

note "no skew"
record 0
note "hostb 250 ms ahead"
record 250

python3 - "$NG_TMP" <<'PY' || fail "alignment"
import json, statistics, sys
t = sys.argv[1]

def ends(path):
    out = {}
    for line in open(path):
        seq, hms = line.split()
        h, m, s = hms.split(":")
        out[int(seq)] = int(h) * 3600 + int(m) * 60 + float(s)
    return out

def load(skew):
    d = "%s/s%d" % (t, skew)
    rep = json.load(open(d + "/report.json"))
    ch = json.load(open(d + "/chrome.json"))
    # the gap between the hosts' first completions of each seq: its median
    a, b = ends(d + "/ends.hosta"), ends(d + "/ends.hostb")
    raw = statistics.median(b[s] - a[s] for s in a if s in b)
    # each rank's GPU slice per seq, relative to rank 0's
    gpu = {}
    for e in ch["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "nccl":
            gpu.setdefault(e["args"]["seq"], {})[e["pid"]] = (e["ts"], e["ts"] + e["dur"])
    return rep, gpu, raw

out = {}
for skew in (0, 250):
    rep, gpu, raw = load(skew)
    off = {o["host"]: o["offset_us"] / 1e3 for o in rep["clock_offsets"]}
    strag = [(s["rank"], s["host"]) for s in rep["stragglers"]]
    late = [s["mean_late_us"] / 1e3 for s in rep["stragglers"]]
    seqs = sorted(s for s in gpu if len(gpu[s]) == 4)
    # where each rank's slice ends, against rank 0's (ms), median over seqs
    rel = {r: statistics.median((gpu[s][r][1] - gpu[s][0][1]) / 1e3 for s in seqs)
           for r in range(4)}
    print("skew %3d ms: raw gap hostb-hosta %.1f ms; offsets %s; stragglers %s late %s; "
          "slice ends vs rank 0 %s; %d collectives" %
          (skew, raw * 1e3, off, strag, ["%.1f" % l for l in late],
           {r: "%.2f" % v for r, v in rel.items()}, len(seqs)))
    out[skew] = (off, strag, late, rel, raw, len(seqs))

(o0, s0, l0, r0, raw0, n0), (o1, s1, l1, r1, raw1, n1) = out[0], out[250]
# the skew is real: in the trace as recorded
assert abs(raw0) < 0.1 and abs(raw1 - 0.25) < 0.1, (raw0, raw1)
# The spread of one collective's ends on one clock: ranks 0 and 1, both
# on hosta, where nothing is corrected (ms).
sp0, sp1 = abs(r0[1]), abs(r1[1])
# the offsets stated: hostb 250 ms ahead (negative: subtracted), or none
assert o0["hosta"] == 0 and o1["hosta"] == 0
assert abs(o0["hostb"]) < 2 + sp0, (o0, sp0)
assert abs(o1["hostb"] + 250) < 2 + sp1, (o1, sp1)
# the same stragglers, at the same size
assert s0 == s1 == [(3, "hostb")], (s0, s1)
assert all(15 < l < 30 for l in l0 + l1), (l0, l1)
# the same Chrome trace: every rank's slices next to rank 0's, skew or not
assert n0 == n1 and n0 >= 100, (n0, n1)
# against the 250 ms skew: hostb's ranks (rank 3, the straggler, ends
# first by the time its peers' threads take to notice it arrived), as
# near rank 0 as the ranks are, anywhere, without the skew
spread = max([abs(v) for v in r0.values()] + [sp1])
for r in (2, 3):
    tol = (15 if r == 3 else 8) + spread
    assert abs(r1[r]) < tol, (r, r1, "spread", spread)
PY
assert_grep "clock: host hostb's clock is 2[45][0-9.]* ms ahead of hosta's" "$NG_TMP/s250/summary.txt"
echo PASS
