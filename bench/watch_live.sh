#!/bin/sh
# Does `ncclguard watch` keep up with a job?  RANKS ranks spread over
# HOSTS hosts (namespaces with a session daemon each, as in tests/live/),
# each writing RATE collectives a second for SECONDS through
# libncclguard-tp.so (bench/live_emit.c: coll_enqueue for every call,
# coll_complete for one in 10), live sessions streamed to one
# lttng-relayd, `ncclguard watch --json --every 1` attached before the
# job starts.
#
#   bench/watch_live.sh [RANKS [RATE [SECONDS [HOSTS]]]]   (64 1000 20 1; as root)
#
# With METRICS=1, watch also serves --metrics on loopback and a scraper
# reads /metrics every second, as Prometheus would.  The ranks' arrivals
# are precise and aligned, so watch's straggler rule judges every call.
#
# Prints one line: the events the ranks wrote, those LTTng kept (the
# relayd's copy on disk), those watch read, how far behind the newest
# event watch was while the job ran (median and max of its reports), how
# long after the job it had every rank's last call, and its CPU time (and
# µs per event).  Everything runs on this machine: the ranks, LTTng's
# daemons and watch share its cores.
RANKS=${1:-64} RATE=${2:-1000} SECS=${3:-20} HOSTS=${4:-1}
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
NG_BUILD=${NG_BUILD:-$NG_ROOT/build}
export NG_ROOT NG_BUILD
EMIT="$NG_BUILD/bench/live_emit"
[ -x "$EMIT" ] || { echo "watch_live: build $EMIT first (make $EMIT)"; exit 1; }
. "$NG_ROOT/tests/live/common.sh"

ng_relayd_start "$NG_TMP/relay"
h=0
while [ $h -lt "$HOSTS" ]; do
	ng_host_up "node$h"
	ng_live_session "node$h" "ncclguard-bench-$h"
	h=$((h + 1))
done
MOPT="" MPORT=""
if [ "${METRICS:-0}" = 1 ]; then
	MPORT=$(ng_free_ports 1)
	MOPT="--metrics 127.0.0.1:$MPORT"
fi
# shellcheck disable=SC2086
"$NG_BIN" watch "$NG_RELAY_URL" --json --every 1 --stuck 3600 $MOPT >"$NG_TMP/watch.json" \
	2>"$NG_TMP/watch.err" &
WATCH=$!
NG_AT_EXIT="kill $WATCH 2>/dev/null; $NG_AT_EXIT"
SCRAPER=""
if [ -n "$MPORT" ]; then
	python3 - "$MPORT" "$NG_TMP/scrapes" <<'PY' &
import sys, time, urllib.request
url = "http://127.0.0.1:%s/metrics" % sys.argv[1]
out = open(sys.argv[2], "w")
while True:
    t = time.monotonic()
    try:
        body = urllib.request.urlopen(url, timeout=5).read()
        print("%.4f %d %d" % (time.monotonic() - t, len(body),
              sum(1 for l in body.splitlines() if l and not l.startswith(b"#"))), file=out, flush=True)
    except Exception as e:
        print("error %s" % e, file=out, flush=True)
    time.sleep(max(0, 1 - (time.monotonic() - t)))
PY
	SCRAPER=$!
	NG_AT_EXIT="kill $SCRAPER 2>/dev/null; $NG_AT_EXIT"
fi
i=0
while [ "$(grep -c '"attached to' "$NG_TMP/watch.json")" -lt "$HOSTS" ]; do
	[ $i -lt 100 ] || fail "watch did not attach to the $HOSTS sessions"
	sleep 0.1; i=$((i + 1))
done

per=$((RANKS / HOSTS))
start=$(date +%s.%N)
h=0
while [ $h -lt "$HOSTS" ]; do
	n=$per; [ $h = $((HOSTS - 1)) ] && n=$((RANKS - per * (HOSTS - 1)))
	ng_on "node$h" env NCCLGUARD_JOB=bench "$EMIT" -n $n -r "$RATE" -t "$SECS" \
		-b $((per * h)) -w "$RANKS" >"$NG_TMP/emit.$h" 2>&1 &
	echo $! >"$NG_TMP/emit.$h.pid"
	h=$((h + 1))
done
h=0
while [ $h -lt "$HOSTS" ]; do
	wait "$(cat "$NG_TMP/emit.$h.pid")" || { cat "$NG_TMP/emit.$h"; fail "live_emit on node$h"; }
	h=$((h + 1))
done
job_end=$(date +%s.%N)
calls=$(awk '{ s += $4 } END { print s }' "$NG_TMP"/emit.[0-9]*)
late=$(awk 'BEGIN { m = 0 } { if ($6 > m) m = $6 } END { print m }' "$NG_TMP"/emit.[0-9]*)
written=$(( calls + calls / 10 + RANKS * 4 ))

# Caught up: every rank's last call in a report.
caught=""
i=0
while [ $i -lt 1200 ]; do
	if tail -n 3 "$NG_TMP/watch.json" | python3 -c '
import json, sys
want = int(sys.argv[1])
for l in sys.stdin:
    try:
        o = json.loads(l)
    except ValueError:
        continue
    if o.get("type") == "progress" and len(o["ranks"]) == int(sys.argv[2]) and \
       sum(c["seq"] for r in o["ranks"] for c in r["comms"]) >= want:
        sys.exit(0)
sys.exit(1)' "$calls" "$RANKS"; then
		caught=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $job_end))")
		break
	fi
	sleep 0.1; i=$((i + 1))
done
cpu=$(awk '{ print ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$WATCH/stat")
[ -z "$SCRAPER" ] || kill "$SCRAPER"
kill "$WATCH"
wait "$WATCH"
extra=""
if [ -n "$SCRAPER" ]; then
	extra=$(awk '$1 == "error" { e++; next } { n++; t += $1; if ($1 > m) m = $1; b = $2; s = $3 }
		END { printf "; /metrics scraped %d times (%d failed): mean %.1f ms, max %.1f ms, %d bytes, %d series",
		n, e, n ? 1000 * t / n : 0, 1000 * m, b, s }' "$NG_TMP/scrapes")
fi
extra="$extra; straggler records: $(grep -c '"type": *"straggler"' "$NG_TMP/watch.json")"
python3 - "$NG_TMP/watch.json" "$start" "$job_end" >"$NG_TMP/lag" <<'PY'
import json, statistics, sys
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
behind, events = [], 0
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o.get("type") != "progress":
        continue
    events = o["events"]
    if t0 + 2 <= o["time"] <= t1 and o["behind_s"] is not None:
        behind.append(o["behind_s"])
print(events, "%.1f" % statistics.median(behind) if behind else "-",
      "%.1f" % max(behind) if behind else "-")
PY
read -r seen med max <"$NG_TMP/lag"
for h in $NG_HOSTS; do ng_on "$h" lttng destroy -a >/dev/null; done
kept=$(babeltrace2 "$NG_TMP/relay" 2>/dev/null | grep -c 'ncclguard:')
echo "ranks $RANKS x $RATE calls/s x ${SECS} s on $HOSTS host(s): events written $written," \
	"kept by LTTng $kept, read by watch $seen; behind while running: median ${med} s," \
	"max ${max} s; all last calls seen ${caught:-never (2 min)} s after the job;" \
	"watch CPU $cpu s ($(python3 -c "print('%.2f' % ($cpu * 1e6 / max($seen, 1)))") us/event);" \
	"ranks late on their schedule by up to ${late} ms$extra"
