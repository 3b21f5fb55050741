#!/bin/sh
# Heartbeats on the CPU backend, 4 ranks recorded by `ncclguard run`:
#   A  a healthy job of quick all-reduces: no rank waits a second and the
#      job is shorter than the idle period (10 s), so no heartbeat
#   D  a healthy job longer than that, each call waited for (a step's
#      sync): a beat every 10 s per rank, saying it waits on nothing
#   B  rank 3 skips its 20th call: ranks 0-2 wait in seq 20 until their
#      watchdog exits them (6 s); each writes heartbeats 2 s apart that
#      carry who it is (host, pid, rank, world size, job id) and where
#      its comm stands (size, its rank in it, seq 20 entered, 19 seen
#      complete, waiting in the all-reduce of seq 20 for over a second);
#      rank 3, waiting in nothing, writes none
#   C  rank 3 stalls in its init (an injected stall): ranks 0-2 wait in
#      theirs, whose comm does not exist yet; their heartbeats say init,
#      with the comm's hash, size and their rank from the init's call
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EX="$NG_BUILD/bin/allreduce_example"
[ -x "$EX" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
command -v python3 >/dev/null || fail "python3 not installed"
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_HEALTH_INTERVAL=0
unset NCCLGUARD_VERIFY NCCLGUARD_INJECT

# job NAME STATUS [ENV...] -- [EXAMPLE OPTIONS]: 4 ranks under run -o;
# STATUS is run's expected exit status.
job() {
	_n=$1 _want=$2; shift 2
	_env=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do _env="$_env $1"; shift; done
	[ $# -gt 0 ] && shift
	# shellcheck disable=SC2086
	env $_env timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/$_n" -- "$EX" --launch 4 \
		--min-bytes 8 --max-bytes 8 --warmup 0 "$@" >"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err"
	_rc=$?
	[ "$_rc" = "$_want" ] || { cat "$NG_TMP/$_n.err"; fail "job $_n: status $_rc, not $_want"; }
	ng_trace_text "$NG_TMP/$_n" "$NG_TMP/$_n.txt"
}

# beats NAME PYTHON: PYTHON's asserts on the heartbeats as hb, a list of
# dicts of their fields, in time order, each with "t" (seconds).
beats() {
	python3 - "$NG_TMP/$1.txt" "$2" <<'PY' || { grep heartbeat "$NG_TMP/$1.txt" | head; fail "$1: heartbeats"; }
import re, sys
hb = []
for line in open(sys.argv[1]):
    if "ncclguard:heartbeat:" not in line:
        continue
    h, m, s = re.match(r"\[(\d+):(\d+):([\d.]+)\]", line).groups()
    d = {"t": int(h) * 3600 + int(m) * 60 + float(s)}
    payload = line.split("}, {")[-1]
    for k, v in re.findall(r'(\w+) = ("[^"]*"|[^,}]+)', payload):
        d[k] = v.strip('"').strip()
    hb.append(d)
exec(sys.argv[2])
PY
}

note "A: a healthy job"
job a 0 -- --iters 20
assert_eq "$(grep -c 'ncclguard:heartbeat:' "$NG_TMP/a.txt")" 0 "A: heartbeats"

note "B: rank 3 skips seq 20"
job b 4 NCCLGUARD_TIMEOUT=6 NCCLGUARD_ON_TIMEOUT=exit -- --iters 20 --skip-seq 20 --skip-rank 3
beats b '
ranks = sorted({int(x["rank"]) for x in hb})
assert ranks == [0, 1, 2], ranks
comms = {x["comm_hash"] for x in hb}
assert len(comms) == 1, comms
for x in hb:
    assert x["host"] and int(x["pid"]) > 0 and x["job_id"], x
    assert int(x["world_size"]) == 4 and int(x["nranks"]) == 4, x
    assert x["comm_rank"] == x["rank"], x
    assert (x["last_seq"], x["done_seq"]) == ("20", "19"), x
    assert (x["waiting"], x["op"], x["wait_seq"]) == ("collective", "allreduce", "20"), x
    assert int(x["waited_ns"]) >= 1000000000, x
    assert int(x["period_ns"]) == 2000000000, x
for r in ranks:
    mine = [x for x in hb if int(x["rank"]) == r]
    assert len(mine) >= 2, (r, len(mine))
    # the period apart, as the watchdog ticks: never closer
    for a, b in zip(mine, mine[1:]):
        assert b["t"] - a["t"] >= 1.9, (r, a["t"], b["t"])
        assert int(b["waited_ns"]) > int(a["waited_ns"]), (a, b)
'

note "C: rank 3 stalls in its init"
job c 4 NCCLGUARD_INIT_TIMEOUT=6 NCCLGUARD_ON_TIMEOUT=exit NCCLGUARD_INJECT=stall:rank=3,op=init \
	-- --iters 2
beats c '
waiting = [x for x in hb if x["waiting"] == "init" and int(x["rank"]) in (0, 1, 2)]
assert sorted({int(x["rank"]) for x in waiting}) == [0, 1, 2], hb
assert len({x["comm_hash"] for x in waiting}) == 1, waiting
for x in waiting:
    assert int(x["nranks"]) == 4 and x["comm_rank"] == x["rank"], x
    assert x["last_seq"] == "0" and int(x["waited_ns"]) >= 1000000000, x
'
note "D: a healthy job of over 10 s"
job d 0 NCCLSIM_LATENCY_US=25000 -- --iters 500 --sync
beats d '
assert sorted({int(x["rank"]) for x in hb}) == [0, 1, 2, 3], hb
for x in hb:
    assert (x["waiting"], x["op"], x["waited_ns"]) == ("", "", "0"), x
    assert int(x["period_ns"]) == 10000000000 and int(x["last_seq"]) > 0, x
for r in range(4):
    mine = [x for x in hb if int(x["rank"]) == r]
    for a, b in zip(mine, mine[1:]):
        assert b["t"] - a["t"] >= 9.5, (r, a["t"], b["t"])
'
echo "PASS"
