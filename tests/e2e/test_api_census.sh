#!/bin/sh
# The API census on the CPU backend, 2 ranks recorded by `ncclguard run`:
#   A  its libnccl.so.2 as built: no warning; each process writes one
#      api_census, 0 unknown of its functions, no device API, no error;
#      the report says nothing of it (no api_unknown, no device API line)
#   B  its copy with one more function (build/sim-extra/), standing for
#      NCCL 2.31.0: each process warns once naming ncclFutureThing and
#      the version; its api_census says so; `ncclguard analyze` lists it
#      once in incomplete[] as api_unknown, in the text and in JSON
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EX="$NG_BUILD/bin/allreduce_example"
SIMX="$NG_BUILD/sim-extra"
[ -x "$EX" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
[ -f "$SIMX/libnccl.so.2" ] || fail "$SIMX/libnccl.so.2 not built"
command -v python3 >/dev/null || fail "python3 not installed"
export NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_HEALTH_INTERVAL=0
unset NCCLGUARD_VERIFY NCCLGUARD_INJECT

# job NAME LIBDIRS: 2 ranks under run -o, 8-byte all-reduces.
job() {
	LD_LIBRARY_PATH="$2" timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/$1" -- "$EX" --launch 2 \
		--min-bytes 8 --max-bytes 8 --warmup 0 --iters 3 >"$NG_TMP/$1.out" 2>"$NG_TMP/$1.err" ||
		{ cat "$NG_TMP/$1.err"; fail "job $1: status $?"; }
	ng_trace_text "$NG_TMP/$1" "$NG_TMP/$1.txt"
	"$NG_BIN" analyze "$NG_TMP/$1" --json "$NG_TMP/$1.json" >"$NG_TMP/$1.sum" 2>"$NG_TMP/$1.aerr" ||
		{ cat "$NG_TMP/$1.aerr"; fail "job $1: analyze failed"; }
}

# census NAME PYTHON: PYTHON's asserts on the job's api_census events as
# ev, a list of dicts of their fields.
census() {
	python3 - "$NG_TMP/$1.txt" "$2" <<'PY' || { grep api_census "$NG_TMP/$1.txt"; fail "$1: api_census"; }
import re, sys
ev = []
for line in open(sys.argv[1], errors="replace"):
    if "ncclguard:api_census:" not in line:
        continue
    body = line[line.rindex("{"):]
    d = dict((k, int(v)) for k, v in re.findall(r'(\w+) = (-?\d+)', body))
    d.update(re.findall(r'(\w+) = "([^"]*)"', body))
    ev.append(d)
exec(sys.argv[2])
PY
}

# A: the CPU backend as built.
job a "$NG_SIM"
assert_no_grep "does not interpose\|API census" "$NG_TMP/a.err"
census a '
assert len(ev) == 2, ev
for e in ev:
    assert e["n_exported"] > 30 and e["n_unknown"] == 0 and e["unknown"] == "", e
    assert e["device_api"] == 0 and e["error"] == "", e
    assert e["path"].endswith("/sim/libnccl.so.2"), e
'
assert_no_grep "api_unknown\|GPU-initiated" "$NG_TMP/a.sum"
python3 - "$NG_TMP/a.json" <<'PY' || fail "A: report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert not [i for i in r["incomplete"] if i["what"] == "api_unknown"], r["incomplete"]
assert r["api_census"] == {"processes": 2, "failed": 0, "device_api_processes": 0,
                           "gpu_initiated_unrecorded": False}, r["api_census"]
PY

# B: one function more, NCCL "2.31.0".
NCCLSIM_VERSION=23100 job b "$SIMX:$NG_SIM"
assert_eq "$(grep -c 'does not interpose' "$NG_TMP/b.err")" 2 "B: one warning per process"
assert_grep "ncclguard\[rank 0 pid [0-9]*\]: NCCL 2.31.0 at $SIMX/libnccl.so.2 exports 1 function ncclguard does not interpose: ncclFutureThing; its calls are not recorded" "$NG_TMP/b.err"
census b '
assert len(ev) == 2, ev
for e in ev:
    assert e["n_unknown"] == 1 and e["unknown"] == "ncclFutureThing", e
    assert e["nccl_version"] == 23100 and e["error"] == "", e
'
assert_eq "$(grep -c '! api_unknown: ' "$NG_TMP/b.sum")" 1 "B: api_unknown once in the summary"
assert_grep "! api_unknown: NCCL 2.31.0 at $SIMX/libnccl.so.2 exports 1 function ncclguard does not interpose: ncclFutureThing; its calls are not recorded (2 processes)" "$NG_TMP/b.sum"
python3 - "$NG_TMP/b.json" <<'PY' || fail "B: report.json"
import json, sys
r = json.load(open(sys.argv[1]))
u = [i for i in r["incomplete"] if i["what"] == "api_unknown"]
assert len(u) == 1 and "ncclFutureThing" in u[0]["detail"] and "2.31.0" in u[0]["detail"], u
assert r["api_census"]["processes"] == 2, r["api_census"]
PY
echo ok
