# Sourced by tests/matrix/test_*.sh after tests/lib.sh: the CPU backend,
# with a cost model slow enough to outweigh the real copying on a loaded
# machine, so that a pair's bandwidth is the model's unless something
# (an injected delay) slows it; and the check of matrix.json.
export LD_LIBRARY_PATH="$NG_SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCLSIM_GBPS=0.02 NCCLSIM_LATENCY_US=20
# The launcher variables of the job that runs the tests are not ours.
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK SLURM_PROCID SLURM_NTASKS \
	OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE NCCLGUARD_INJECT
SMALL="--bytes 256K --iters 3"

# check_json FILE N: valid JSON with matrix.json's keys (docs/matrix.md)
# for N ranks; prints "failed a-b" and "slow a-b" lines.
check_json() {
	python3 - "$1" "$2" <<'PY' || fail "$1: not ncclguard-matrix/1"
import json, math, sys
m = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert m["schema"] == "ncclguard-matrix/1", m.get("schema")
assert [r["rank"] for r in m["ranks"]] == list(range(n)), m["ranks"]
for r in m["ranks"]:
    assert set(r) >= {"rank", "host", "gpu_pci_bus_id"}, r
for key in ("latency_us", "busbw_gbps"):
    sq = m[key]
    assert len(sq) == n and all(len(row) == n for row in sq), key
    for a in range(n):
        assert sq[a][a] is None, (key, a)
        for b in range(n):
            assert sq[a][b] == sq[b][a], (key, a, b)
            assert sq[a][b] is None or (math.isfinite(sq[a][b]) and sq[a][b] > 0)
failed = {(f["a"], f["b"]): f["reason"] for f in m["failed"]}
for f in m["failed"]:
    assert set(f) == {"a", "b", "reason"} and f["a"] < f["b"] and f["reason"], f
    assert m["busbw_gbps"][f["a"]][f["b"]] is None, f
for a in range(n):
    for b in range(a + 1, n):
        assert (m["busbw_gbps"][a][b] is None) == ((a, b) in failed), (a, b)
        assert (m["latency_us"][a][b] is None) == ((a, b) in failed), (a, b)
for s in m["slow"]:
    assert set(s) == {"a", "b", "busbw_gbps", "expected_gbps"}, s
    assert s["busbw_gbps"] == m["busbw_gbps"][s["a"]][s["b"]], s
    assert s["busbw_gbps"] < s["expected_gbps"], s
for (a, b), why in sorted(failed.items()):
    print("failed %d-%d %s" % (a, b, why))
for s in m["slow"]:
    print("slow %d-%d" % (s["a"], s["b"]))
for s in m.get("suspects", []):
    print("suspect %d" % s["rank"])
PY
}
