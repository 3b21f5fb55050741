#!/bin/sh
# `watch --metrics` scraped by a real Prometheus (Debian's, an instance of
# its own on loopback, every 0.5 s) while a 4-rank CPU-backend job runs on
# two hosts (ranks 0-1 on hosta, 2-3 on hostb): rank 2 is a straggler
# (a 20 ms delay injected before each all-reduce), then rank 3 skips the
# last all-reduce, so ranks 0-2 wait in it.  Through Prometheus' HTTP
# API: the straggler's lateness and the hang gauge (the stuck seq as the
# value) were seen with the right job, host and rank labels, and the
# scrapes succeeded (Prometheus asks for OpenMetrics).  `promtool check
# metrics` passes on the text format; only GET /metrics is served; a bad
# ADDR:PORT and a port in use are refused in words.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/live/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
for c in prometheus promtool curl; do
	command -v $c >/dev/null || { echo "SKIP: $c not installed (Debian's prometheus, curl)"; exit 0; }
done

note "ADDR:PORT refused"
for bad in 127.0.0.1 127.0.0.1:0 127.0.0.1:65536 ::1:9 1.2.3:9 bad_name:9 :9; do
	rc=0; "$NG_BIN" watch net://127.0.0.1:1 --metrics "$bad" >/dev/null 2>"$NG_TMP/bad" || rc=$?
	assert_eq "$rc" 2 "watch --metrics $bad"
	assert_grep "^ncclguard watch: --metrics '$bad': " "$NG_TMP/bad"
done
python3 -c 'import socket, time, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(30)' >"$NG_TMP/taken" &
TAKER=$!
NG_AT_EXIT="kill $TAKER 2>/dev/null; $NG_AT_EXIT"
i=0
until [ -s "$NG_TMP/taken" ]; do
	[ $i -lt 100 ] || fail "no port taken"
	sleep 0.1; i=$((i + 1))
done
rc=0; "$NG_BIN" watch net://127.0.0.1:1 --metrics "127.0.0.1:$(cat "$NG_TMP/taken")" \
	>/dev/null 2>"$NG_TMP/inuse" || rc=$?
assert_eq "$rc" 1 "watch --metrics on a port in use"
assert_grep "cannot listen there: Address already in use" "$NG_TMP/inuse"
kill $TAKER

ng_relayd_start "$NG_TMP/relay"
ng_host_up hosta
ng_host_up hostb
ng_live_session hosta "ncclguard-ma-$$"
ng_live_session hostb "ncclguard-mb-$$"
set -- $(ng_free_ports 2)
MP=$1 PP=$2
JOB="metrics-$$"
"$NG_BIN" watch "$NG_RELAY_URL" --metrics "127.0.0.1:$MP" --stuck 3 --every 1 --job "$JOB" \
	>"$NG_TMP/watch.txt" 2>"$NG_TMP/watch.err" &
WATCH=$!
NG_AT_EXIT="kill $WATCH 2>/dev/null; $NG_AT_EXIT"
ng_until_grep "serving /metrics on 127.0.0.1:$MP" "$NG_TMP/watch.txt" $WATCH
ng_until_grep "attached to .*ncclguard-mb" "$NG_TMP/watch.txt" $WATCH
ng_until_grep "attached to .*ncclguard-ma" "$NG_TMP/watch.txt" $WATCH

note "only GET /metrics"
M="http://127.0.0.1:$MP"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
assert_eq "$(code "$M/")" 404 "GET /"
assert_eq "$(code "$M/metricsx")" 404 "GET /metricsx"
assert_eq "$(code -X POST -d x "$M/metrics")" 405 "POST /metrics"
assert_eq "$(code -X PUT -d x "$M/metrics")" 405 "PUT /metrics"
curl -s -D "$NG_TMP/h.text" -o /dev/null "$M/metrics"
assert_grep "^Content-Type: text/plain; version=0.0.4; charset=utf-8" "$NG_TMP/h.text"
curl -s -D "$NG_TMP/h.om" -o "$NG_TMP/om" -H 'Accept: application/openmetrics-text; version=1.0.0' \
	"$M/metrics"
assert_grep "^Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8" \
	"$NG_TMP/h.om"
[ "$(tail -n 1 "$NG_TMP/om")" = "# EOF" ] || fail "OpenMetrics does not end with # EOF"

note "Prometheus of our own, scraping every 0.5 s"
cat >"$NG_TMP/prometheus.yml" <<CONF
global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: ncclguard
    # our job label is the NCCL job's id: kept, not renamed exported_job
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$MP']
CONF
prometheus --config.file="$NG_TMP/prometheus.yml" --storage.tsdb.path="$NG_TMP/prom" \
	--web.listen-address="127.0.0.1:$PP" >"$NG_TMP/prometheus.log" 2>&1 &
PROM=$!
NG_AT_EXIT="kill $PROM 2>/dev/null; $NG_AT_EXIT"
P="http://127.0.0.1:$PP"
i=0
until curl -sf "$P/-/ready" >/dev/null 2>&1; do
	kill -0 $PROM 2>/dev/null || { cat "$NG_TMP/prometheus.log"; fail "prometheus died"; }
	[ $i -lt 600 ] || { cat "$NG_TMP/prometheus.log"; fail "prometheus not ready in 60 s"; }
	sleep 0.1; i=$((i + 1))
done

# query EXPR: the instant query's result, one "labels value" line per series,
# sorted.
query() {
	python3 - "$P" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]})
r = json.load(urllib.request.urlopen(url, timeout=10))
assert r["status"] == "success", r
out = []
for s in r["data"]["result"]:
    m = s["metric"]
    keys = ",".join(f"{k}={m[k]}" for k in ("job", "host", "rank") if k in m)
    out.append(f"{keys} {float(s['value'][1]):g}")
print("\n".join(sorted(out)))
PY
}

# until_query EXPR WANT: waits (90 s at most) for query EXPR to print WANT.
until_query() {
	_end=$(($(date +%s) + 90))
	until _got=$(query "$1") && [ "$_got" = "$2" ]; do
		kill -0 $WATCH 2>/dev/null || { cat "$NG_TMP/watch.txt"; fail "watch exited"; }
		[ "$(date +%s)" -lt $_end ] || { tail -n 30 "$NG_TMP/watch.txt";
			fail "'$1' not '$2' within 90 s, but '$_got'"; }
		sleep 0.2
	done
}

note "a straggler, then a stall: rank 2 delayed 20 ms a call, rank 3 skips the last"
for r in 0 1 2 3; do
	h=hosta; [ $r -ge 2 ] && h=hostb
	ng_rank $h m $r 4 LD_LIBRARY_PATH="$NG_SIM" LD_PRELOAD="$NG_PRELOAD" NCCLGUARD_JOB="$JOB" \
		NCCLGUARD_TIMEOUT=never NCCLGUARD_HEALTH_INTERVAL=0 \
		NCCLGUARD_INJECT="delay:ms=20,rank=2,op=allreduce" \
		-- "$EXAMPLE" --id-file "$NG_TMP/id.m" --min-bytes 1M --max-bytes 1M --warmup 2 \
		--iters 400 --skip-seq 402 --skip-rank 3
	NG_AT_EXIT="pkill -KILL -P $(cat "$NG_TMP/m.$r.pid") 2>/dev/null; $NG_AT_EXIT"
done
# the hang: ranks 0-2 wait in seq 402, rank 3 did not enter it (the
# latest samples: on a loaded machine a host's events may come late enough
# for a short-lived hang earlier)
until_query "ncclguard_hang_seq{job=\"$JOB\"}" \
	"job=$JOB,host=hosta,rank=0 402
job=$JOB,host=hosta,rank=1 402
job=$JOB,host=hostb,rank=2 402
job=$JOB,host=hostb,rank=3 0"
until_query "ncclguard_hangs{job=\"$JOB\"}" "job=$JOB 1"
assert_grep "HANG comm [0-9a-f]* allreduce seq 402" "$NG_TMP/watch.txt"

note "the straggler's lateness, on rank 2 of hostb only"
# the latest rank over the job, and by 10 ms at least (20 ms injected)
late=$(query "topk(1, max_over_time(ncclguard_lateness_seconds{job=\"$JOB\"}[5m]))")
[ "$(echo "$late" | cut -d' ' -f1)" = "job=$JOB,host=hostb,rank=2" ] ||
	fail "the latest rank: '$late' (want rank 2 of hostb)"
python3 -c 'import sys; sys.exit(not 0.010 <= float(sys.argv[1]) < 5)' "${late##* }" ||
	fail "rank 2's lateness: ${late##* } s (want 20 ms or so)"
assert_eq "$(query "max_over_time(ncclguard_straggler{job=\"$JOB\"}[5m]) == 1")" \
	"job=$JOB,host=hostb,rank=2 1" "the ranks named stragglers"

note "the counts and the scrapes"
assert_eq "$(query "min_over_time(up{job=\"ncclguard\"}[5m])" | cut -d' ' -f2)" 1 \
	"every scrape succeeded"
assert_eq "$(query "max_over_time(ncclguard_calls_total{job=\"$JOB\",rank=\"3\"}[5m])" |
	cut -d' ' -f2)" 401 "rank 3's calls"
[ -n "$(query "ncclguard_op_busbw_bytes_per_second{job=\"$JOB\",op=\"allreduce\",size=\"1048576\",nranks=\"4\"} > 0")" ] ||
	fail "no bus bandwidth of the 1 MiB all-reduces"
curl -sf "$M/metrics" >"$NG_TMP/metrics.txt" || fail "GET /metrics"
promtool check metrics <"$NG_TMP/metrics.txt" >"$NG_TMP/promtool.out" 2>&1 ||
	{ cat "$NG_TMP/promtool.out"; fail "promtool check metrics"; }
[ ! -s "$NG_TMP/promtool.out" ] || { cat "$NG_TMP/promtool.out"; fail "promtool's lint"; }

note "the Grafana dashboard's queries, on this Prometheus"
python3 - "$P" "$JOB" "$NG_ROOT/examples/grafana/ncclguard.json" "$NG_TMP/metrics.txt" <<'PY' ||
import json, re, sys, urllib.parse, urllib.request
prom, job, dash, page = sys.argv[1:]
served = set(re.findall(r"^# TYPE (\S+)", open(page).read(), re.M))
d = json.load(open(dash))
assert [v["name"] for v in d["templating"]["list"]] == ["datasource", "job"], d["templating"]
for p in d["panels"]:
    assert p["datasource"]["uid"] == "${datasource}", p["title"]
    for t in p["targets"]:
        e = t["expr"].replace("$job", job)
        for m in re.findall(r"ncclguard_\w+", e):
            assert m in served, (p["title"], m)
        url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": e})
        r = json.load(urllib.request.urlopen(url, timeout=10))
        assert r["status"] == "success", (p["title"], e, r)
print(len(d["panels"]), "panels")
PY
	fail "the dashboard's queries"

kill $PROM
for r in 0 1 2 3; do pkill -KILL -P "$(cat "$NG_TMP/m.$r.pid")" 2>/dev/null; done
for h in hosta hostb; do ng_on $h lttng destroy -a >/dev/null; done
ng_until_gone "$WATCH" "$NG_TMP/watch.txt"
rc=0; wait "$WATCH" || rc=$?
assert_eq "$rc" 5 "watch's status after a hang"
echo ok
