#!/bin/sh
# The Chrome trace under its cap: a trace ~8x larger than a 2 MiB cap
# (8 ranks, 5,000 collectives, a mismatch in the middle, a hang at the
# end) gives a file under the cap whose windows (the end, the mismatch)
# are whole next to --chrome-all's, with otherData saying what was left
# out; --chrome-all writes every collective; --ranks and --chrome-window
# keep only those ranks and times; malformed values are usage errors.
. "$NG_ROOT/tests/lib.sh"
GEN="$NG_BUILD/tests/ng_trace_gen"
T="$NG_TMP/trace"
"$GEN" -o "$T" --ranks 8 --iters 5000 --skip-last 5 --mismatch 2:2500:999 || fail "gen"

note "bounded (2 MiB) against --chrome-all"
"$NG_BIN" analyze "$T" --chrome "$NG_TMP/b.json" --chrome-max 2 > "$NG_TMP/out" 2>&1 ||
	{ cat "$NG_TMP/out"; fail "analyze exited $?"; }
"$NG_BIN" analyze "$T" --chrome "$NG_TMP/a.json" --chrome-all > "$NG_TMP/out" 2>&1 ||
	{ cat "$NG_TMP/out"; fail "analyze --chrome-all exited $?"; }
for f in b a; do
	python3 "$NG_ROOT/tests/analyze/check_chrome.py" "$NG_TMP/$f.json" || fail "$f.json malformed"
done
python3 "$NG_ROOT/tests/analyze/check_chrome_window.py" "$NG_TMP/b.json" "$NG_TMP/a.json" 2097152 ||
	fail "bounded trace"
python3 - "$NG_TMP/b.json" "$NG_TMP/a.json" <<'PY' || fail "otherData"
import json, sys
b, a = (json.load(open(p))["otherData"]["selection"] for p in sys.argv[1:])
assert a["collectives_written"] == a["collectives"] == 4999, a
assert b["collectives_left_out"] > 0 and b["sample_one_in"] > 1, b
assert b["windows"][0]["complete"], b
assert any(w["why"].startswith("mismatch: ") for w in b["windows"]), b
PY

note "the default cap keeps this trace whole"
"$NG_BIN" analyze "$T" --chrome "$NG_TMP/d.json" > /dev/null 2>&1 || fail "analyze exited $?"
python3 -c 'import json,sys; s = json.load(open(sys.argv[1]))["otherData"]["selection"]
assert s["collectives_left_out"] == 0 and s["collectives_written"] == 4999, s' "$NG_TMP/d.json" ||
	fail "default cap left collectives out"

note "--ranks 0,2-3 --chrome-window 1:1.5"
"$NG_BIN" analyze "$T" --chrome "$NG_TMP/r.json" --ranks 0,2-3 --chrome-window 1:1.5 \
	> /dev/null 2>&1 || fail "analyze exited $?"
python3 "$NG_ROOT/tests/analyze/check_chrome.py" "$NG_TMP/r.json" || fail "r.json malformed"
python3 - "$NG_TMP/r.json" <<'PY' || fail "filters"
import json, sys
d = json.load(open(sys.argv[1]))
x = [e for e in d["traceEvents"] if e["ph"] == "X"]
assert x and {e["pid"] for e in x} == {0, 2, 3}, {e["pid"] for e in x}
# A rank's call and its GPU slice go together: kept when either overlaps.
end = {}
for e in x:
    k = (e["pid"], e["args"]["seq"])
    end[k] = max(end.get(k, 0), e["ts"] + e["dur"])
assert all(e["ts"] <= 1.5e6 for e in x) and min(end.values()) >= 1e6
o = d["otherData"]
assert o["ranks"] == [0, 2, 3] and o["window_us"] == [1e6, 1.5e6], o
assert o["selection"]["collectives_filtered"] > 0, o
PY

note "usage errors"
for bad in "--ranks 0,,2" "--ranks x" "--chrome-window 2:1" "--chrome-window 1" "--chrome-max 0"; do
	# shellcheck disable=SC2086
	"$NG_BIN" analyze "$T" --chrome "$NG_TMP/u.json" $bad > /dev/null 2>&1
	rc=$?
	[ "$rc" = 2 ] || fail "$bad: exit $rc, expected 2"
done
echo "chrome bounded: ok"
