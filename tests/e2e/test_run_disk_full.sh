#!/bin/sh
# `ncclguard run` on a filesystem that fills: a 3 MiB tmpfs, a job that
# writes far more.  The run warns at start, says "disk full" at stop and
# in its record, keeps the trace readable (metadata written first, the
# stream cut by the full disk trimmed to whole packets), and the analyzer
# reads what was written.  Then 2 MiB, where no whole packet fits: both
# streams stay empty, and the analyzer reports the full disk from
# run.json (its incomplete[] entry and the summary's first line), not a
# job that was never preloaded.  Needs root and a private mount namespace
# (the tracer tests' isolation gives one); skips otherwise.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"

if [ "$(id -u)" != 0 ] || [ "$NG_LTTNG_ISOLATED" != root ]; then
	echo "SKIP: mounting a small tmpfs needs root in a private mount namespace"
	exit 0
fi
mkdir -p "$NG_TMP/full"
mount -t tmpfs -o size=3m ng-full "$NG_TMP/full" 2>"$NG_TMP/mount.err" ||
	{ echo "SKIP: cannot mount a tmpfs: $(cat "$NG_TMP/mount.err")"; exit 0; }
# After the session daemon is gone (ng_lttng_cleanup runs next), unmount.
NG_AT_EXIT='ng_lttng_cleanup; umount "$NG_TMP/full"; umount "$NG_TMP/tiny" 2>/dev/null'

note "30000 events of each kind into 3 MiB"
rc=0
"$NG_BIN" run -o "$NG_TMP/full/trace" -- "$NG_TP_EMIT" -n 30000 \
	>"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
assert_eq "$rc" 0 "exit status of the job"
assert_grep "warning: only 3.0 MiB free" "$NG_TMP/err"
assert_grep "ncclguard: disk full: " "$NG_TMP/err"
assert_no_grep "(0 events lost)" "$NG_TMP/err"
T="$NG_TMP/full/trace"
assert_eq "$(ng_run_field "$T" disk_full)" true "run.json disk_full"
assert_eq "$(ng_run_field "$T" status)" '"finished"' "run.json status"
[ "$(ng_run_field "$T" free_bytes_end)" -lt 65536 ] || fail "free_bytes_end $(ng_run_field "$T" free_bytes_end)"
[ "$(ng_run_field "$T" free_bytes_start)" -gt 1000000 ] || fail "free_bytes_start $(ng_run_field "$T" free_bytes_start)"
ng_run_field "$T" disk_detail | grep -q "bytes free at stop" || fail "disk_detail $(ng_run_field "$T" disk_detail)"

note "what was written stays readable"
meta=$(find "$T" -name metadata)
[ -s "$meta" ] || fail "metadata empty or missing: $(ls -l "$meta")"
ng_trace_text "$T" "$NG_TMP/text"
pid=$(ng_emit_pid "$NG_TMP/out")
[ "$(ng_count "$NG_TMP/text" process_info "$pid")" -gt 0 ] || fail "no process_info of tp_emit in the trace"
echo "$(grep -c ' ncclguard:' "$NG_TMP/text") events readable"
rc=0
"$NG_BIN" analyze "$T" --json "$NG_TMP/report.json" >"$NG_TMP/analyze.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || grep -q incomplete "$NG_TMP/analyze.out" ||
	{ cat "$NG_TMP/analyze.out"; fail "analyze exit $rc without saying the trace is incomplete"; }

note "2 MiB: nothing but the metadata fits"
mkdir -p "$NG_TMP/tiny"
mount -t tmpfs -o size=2m ng-tiny "$NG_TMP/tiny" || fail "cannot mount a second tmpfs"
T="$NG_TMP/tiny/trace"
rc=0
"$NG_BIN" run -o "$T" -- "$NG_TP_EMIT" -n 30000 >"$NG_TMP/out2" 2>"$NG_TMP/err2" || rc=$?
assert_eq "$rc" 0 "exit status of the job"
assert_grep "ncclguard: disk full: " "$NG_TMP/err2"
assert_eq "$(ng_run_field "$T" disk_full)" true "run.json disk_full"
n=0
for f in $(find "$T" -path '*/64-bit/ncclguard_*' -type f); do
	[ ! -s "$f" ] || fail "$f holds $(wc -c <"$f") bytes: the case needs empty streams"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no stream files under $T"
rc=0
"$NG_BIN" analyze "$T" --json "$NG_TMP/tiny.json" --html "$NG_TMP/tiny.html" \
	>"$NG_TMP/tiny.out" 2>"$NG_TMP/tiny.err" || rc=$?
cat "$NG_TMP/tiny.out" "$NG_TMP/tiny.err"
assert_eq "$rc" 0 "exit status of analyze on an empty trace of a full disk"
assert_no_grep "preloaded" "$NG_TMP/tiny.err"
assert_eq "$(head -n 1 "$NG_TMP/tiny.out")" \
	"INCOMPLETE: the trace holds no events: the disk was full (run.json)" "the summary's first line"
python3 - "$NG_TMP/tiny.json" <<'EOF' || fail "report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["events"] == 0, r["events"]
d = [i for i in r["incomplete"] if i["what"] == "disk_full"]
assert len(d) == 1 and "the disk filled while recording" in d[0]["detail"], r["incomplete"]
EOF
assert_grep "disk_full" "$NG_TMP/tiny.html"
# Not even the metadata: nothing to report, but the reason is said.
rm -rf "$T"/*/ust
rc=0
"$NG_BIN" analyze "$T" >"$NG_TMP/none.out" 2>"$NG_TMP/none.err" || rc=$?
assert_eq "$rc" 1 "exit status of analyze on a full disk without a trace"
assert_grep "the disk was full (run.json disk_full)" "$NG_TMP/none.err"
echo "ok"
