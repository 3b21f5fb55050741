#!/bin/sh
# A sick GPU named at the hang.  When a watchdog fires, its hang dump holds
# NVML's view of the rank's GPU; the analyzer names the GPU whose state
# differs from its peers' as the likely cause.  On the CPU backend with a
# fake NVML (tests/doctor/fakenvml.c): rank 2's GPU busy and its clocks
# held down while rank 1 drops a collective and the others wait.  All
# GPUs alike name none; without NVML the dumps hold no health and the
# hang is still found.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
NVML="$NG_BUILD/tests/doctor/libnvidia-ml.so.1"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
[ -f "$NVML" ] || fail "$NVML not built"
command -v python3 >/dev/null || fail "python3 not installed"

export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_NVML_LIBRARY="$NVML"
unset NCCLGUARD_DUMP_DIR
# The CPU backend's GPU N is on bus 0x10 + N.
gpus() {	# a fake NVML: four idle GPUs, then the lines given
	printf 'init 0\ndriver 570.86.15\n'
	for n in 0 1 2 3; do printf 'gpu.%d.busid 0000:%x:00.0\ngpu.%d.util 0\n' $n $((16 + n)) $n; done
	printf '%s\n' "$@"
}
job() {
	timeout -k 5 60 "$NG_BIN" run -o "$1" --timeout 2 --on-timeout exit \
		--inject 'drop:rank=1,op=allreduce,seq=7' -- "$EXAMPLE" \
		--launch 4 --min-bytes 1K --max-bytes 1K --iters 10 --warmup 0 >/dev/null 2>"$1.err" &&
		fail "the job succeeded with a collective dropped"
	"$NG_BIN" analyze "$1" --json "$1.json" >"$1.sum" 2>&1 || { cat "$1.sum"; fail "analyze failed"; }
}

note "rank 2's GPU busy and throttled while stuck"
gpus 'gpu.2.util 100' 'gpu.2.throttle 0x8' >"$NG_TMP/sick.conf"
NG_FAKE_NVML="$NG_TMP/sick.conf" job "$NG_TMP/A"
python3 - "$NG_TMP/A.json" <<'PY' || { cat "$NG_TMP/A.sum"; fail "see above"; }
import json, sys
r = json.load(open(sys.argv[1]))
h = r['hangs']
assert len(h) == 1, h
s = h[0]['suspect_gpu']
assert s and s['rank'] == 2 and s['pci_bus_id'] == '0000:12:00.0', s
assert 'busy 100%' in s['why'] and 'clocks held down' in s['why'], s
f = [x for x in r['findings'] if x['kind'] == 'hang'][0]
assert "likely cause: rank 2's GPU 0000:12:00.0" in f['summary'], f
assert 'ncclguard doctor' in f['next_step'], f
PY
python3 - "$NG_TMP"/A/*/hang/*.json <<'PY' || fail "see above"
import json, sys
for p in sys.argv[1:]:
    d = json.load(open(p))
    g = d['gpu_health']
    assert len(g) == 1 and g[0]['pci_bus_id'] == '0000:%02X:00.0' % (16 + d['rank']), (p, g)
    assert g[0]['utilization_pct'] == (100 if d['rank'] == 2 else 0), (p, g)
PY

note "all GPUs alike: none named"
gpus >"$NG_TMP/ok.conf"
NG_FAKE_NVML="$NG_TMP/ok.conf" job "$NG_TMP/B"
python3 - "$NG_TMP/B.json" <<'PY' || fail "see above"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r['hangs']) == 1 and r['hangs'][0]['suspect_gpu'] is None, r['hangs']
PY
assert_no_grep "likely cause" "$NG_TMP/B.sum"

note "no NVML: no health in the dumps, the hang still found"
NCCLGUARD_NVML_LIBRARY="$NG_TMP/none.so" job "$NG_TMP/C"
python3 - "$NG_TMP/C.json" "$NG_TMP"/C/*/hang/*.json <<'PY' || fail "see above"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r['hangs']) == 1 and r['hangs'][0]['suspect_gpu'] is None, r['hangs']
for p in sys.argv[2:]:
    assert json.load(open(p))['gpu_health'] == [], p
PY
echo "ok"
