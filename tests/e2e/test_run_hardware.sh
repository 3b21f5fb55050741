#!/bin/sh
# Hardware evidence named in the findings, on the CPU backend with fake
# hosts (NCCLGUARD_SYSROOT: sysfs counters the test changes) and the fake
# NVML (its answers, Xids included, from a file the test rewrites):
#   A  an Xid on rank 1's GPU during a healthy job: a finding, no hang;
#   B  NVLink replays rising on rank 2's GPU while rank 2 straggles:
#      named with the straggler;
#   C  two hosts (namespaces): rank 2's NIC (host-b's mlx5_0, beside its
#      GPU) goes down and up a few seconds before rank 2 stalls and the
#      job hangs: the finding names that NIC, its host and rank 2;
#      counter noise on host-a's Ethernet NIC, which no rank uses, is
#      listed in hardware[] and named by no finding.
# Each change is made once the job is inside a delay injected on the rank
# (its log line seen), so it falls between the sampler's start and the
# trouble however loaded the machine is.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
. "$NG_ROOT/tests/e2e/hwhost.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
NVML="$NG_BUILD/tests/doctor/libnvidia-ml.so.1"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
[ -f "$NVML" ] || fail "$NVML not built"
command -v python3 >/dev/null || fail "python3 not installed"

export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_NVML_LIBRARY="$NVML"
unset NCCLGUARD_DUMP_DIR NCCL_IB_HCA NCCL_SOCKET_IFNAME

# wait_for FILE TEXT: TEXT appears in FILE (at most 60 s).
wait_for() {
	_i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		[ $_i -lt 600 ] || { cat "$1"; fail "'$2' never came in $1"; }
		sleep 0.1
		_i=$((_i + 1))
	done
}

# analyze_json DIR: DIR.json, DIR.sum.
analyze_json() {
	"$NG_BIN" analyze "$1" --json "$1.json" >"$1.sum" 2>&1 ||
		{ cat "$1.sum"; fail "analyze $1 failed"; }
}

hw_fake_host "$NG_TMP/root4" 4
export NCCLGUARD_SYSROOT="$NG_TMP/root4"

note "A: an Xid on rank 1's GPU during a healthy job"
"$NG_BIN" run -o "$NG_TMP/A" --health-interval 0.2 --inject 'delay:ms=3000,rank=3,seq=3' -- \
	"$EXAMPLE" --launch 4 --min-bytes 1K --max-bytes 1K --iters 10 --warmup 0 \
	>"$NG_TMP/A.out" 2>"$NG_TMP/A.err" &
job=$!
wait_for "$NG_TMP/A.err" "injecting delay"
hw_nvml "$NG_TMP/root4" gpu.1.xid 79
wait $job || { cat "$NG_TMP/A.err"; fail "job A failed"; }
analyze_json "$NG_TMP/A"
python3 - "$NG_TMP/A.json" <<'PY' || { cat "$NG_TMP/A.sum"; fail "see above"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r['hangs'] == [], r['hangs']
hw = [h for h in r['hardware'] if h['counter'] == 'xid']
assert len(hw) == 1, r['hardware']
x = hw[0]
assert x['device'] == '0000:11:00.0' and x['after'] == 79 and x['ranks'] == [1], x
f = [f for f in r['findings'] if f['kind'] == 'hardware']
assert len(f) == 1, r['findings']
assert 'Xid 79' in f[0]['summary'] and '0000:11:00.0' in f[0]['summary'], f[0]
assert f[0]['ranks'] == [1], f[0]
PY

note "B: NVLink replays on rank 2's GPU while rank 2 straggles"
"$NG_BIN" run -o "$NG_TMP/B" --health-interval 0.2 --inject 'delay:ms=40,rank=2' -- \
	"$EXAMPLE" --launch 4 --min-bytes 1K --max-bytes 1K --iters 80 --warmup 0 \
	>"$NG_TMP/B.out" 2>"$NG_TMP/B.err" &
job=$!
wait_for "$NG_TMP/B.err" "injecting delay"
hw_nvml "$NG_TMP/root4" gpu.2.nvl.0.replay 7
wait $job || { cat "$NG_TMP/B.err"; fail "job B failed"; }
analyze_json "$NG_TMP/B"
python3 - "$NG_TMP/B.json" <<'PY' || { cat "$NG_TMP/B.sum"; fail "see above"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert [s['rank'] for s in r['stragglers']][:1] == [2], r['stragglers']
hw = [h for h in r['hardware'] if h['counter'] == 'nvlink_replay']
assert len(hw) == 1 and hw[0]['device'] == '0000:12:00.0/link0', r['hardware']
assert hw[0]['before'] == 0 and hw[0]['after'] == 7 and hw[0]['ranks'] == [2], hw[0]
f = [f for f in r['findings'] if f['kind'] == 'hardware']
assert len(f) == 1 and 2 in f[0]['ranks'], r['findings']
assert 'nvlink_replay' in f[0]['summary'] and '0000:12:00.0' in f[0]['summary'], f[0]
PY

note "without NVML: a host with GPUs says so, one without says nothing"
# hw_devices DIR: the trace's hw_device events, "device unseen" a line.
hw_devices() {
	babeltrace2 "$1" 2>/dev/null | sed -n 's/.*ncclguard:hw_device:.* device = "\([^"]*\)".* unseen = "\([^"]*\)".*/\1 \2/p'
}
NCCLGUARD_NVML_LIBRARY="$NG_TMP/no-nvml.so" "$NG_BIN" run -o "$NG_TMP/D" -- \
	"$EXAMPLE" --launch 2 --min-bytes 1K --max-bytes 1K --iters 2 --warmup 0 \
	>"$NG_TMP/D.out" 2>"$NG_TMP/D.err" || { cat "$NG_TMP/D.err"; fail "job D failed"; }
hw_devices "$NG_TMP/D" >"$NG_TMP/D.dev"
assert_grep '^nvml NVML not loadable' "$NG_TMP/D.dev"
assert_grep '^mlx5_0/1 $' "$NG_TMP/D.dev"
mkdir -p "$NG_TMP/nogpu"
cp -r "$NG_TMP/root4/sys" "$NG_TMP/nogpu/"
rm -f "$NG_TMP"/nogpu/sys/bus/pci/devices/0000:1?:00.0
NCCLGUARD_SYSROOT="$NG_TMP/nogpu" NCCLGUARD_NVML_LIBRARY="$NG_TMP/no-nvml.so" \
	"$NG_BIN" run -o "$NG_TMP/E" -- \
	"$EXAMPLE" --launch 2 --min-bytes 1K --max-bytes 1K --iters 2 --warmup 0 \
	>"$NG_TMP/E.out" 2>"$NG_TMP/E.err" || { cat "$NG_TMP/E.err"; fail "job E failed"; }
hw_devices "$NG_TMP/E" >"$NG_TMP/E.dev"
assert_no_grep '^nvml' "$NG_TMP/E.dev"
assert_grep '^mlx5_0/1 $' "$NG_TMP/E.dev"

note "C: rank 2's NIC flaps on host-b before rank 2 stalls; noise on host-a"
if [ "$NG_LTTNG_ISOLATED" != root ] || ! command -v nsenter >/dev/null ||
   ! command -v ip >/dev/null; then
	echo "SKIP: C needs root with CAP_SYS_ADMIN, nsenter and ip (hosts as namespaces)"
	echo "ok"
	exit 0
fi
HOSTS="host-a host-b"
printf '127.0.0.1 localhost\n10.252.0.1 host-a\n10.252.0.2 host-b\n' >"$NG_TMP/hosts"
# Each host: its own network, hostname and /var/run/lttng (a session
# daemon of its own); /dev/shm stays shared, where the CPU backend's
# ranks meet, as a GPU job's meet over the network.
for h in $HOSTS; do
	mkdir -p "$NG_TMP/$h.home"
	unshare -n -u -m --fork sh -c "
		hostname $h && mount --bind '$NG_TMP/hosts' /etc/hosts &&
		mount -t tmpfs -o mode=0755 ng-lttng /var/run/lttng && ip link set lo up || exit 1
		echo \$\$ >'$NG_TMP/$h.pid'
		exec sleep 100000" 2>"$NG_TMP/$h.unshare" &
done
for h in $HOSTS; do
	i=0
	while [ ! -s "$NG_TMP/$h.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$NG_TMP/$h.pid" ] || { echo "SKIP: C: cannot make host $h"; echo ok; exit 0; }
done
in_host() {
	_h=$1; shift
	nsenter -t "$(cat "$NG_TMP/$_h.pid")" -n -u -m -- env LTTNG_HOME="$NG_TMP/$_h.home" "$@"
}
hosts_down() {
	for h in $HOSTS; do
		[ -s "$NG_TMP/$h.pid" ] || continue
		p=$(in_host "$h" cat /var/run/lttng/lttng-sessiond.pid 2>/dev/null) && {
			kill "$p" 2>/dev/null
			i=0
			while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
			kill -9 "$p" 2>/dev/null
		}
		kill "$(cat "$NG_TMP/$h.pid")" 2>/dev/null
	done
	return 0
}
NG_AT_EXIT="hosts_down; $NG_AT_EXIT"
PA=$(cat "$NG_TMP/host-a.pid")
PB=$(cat "$NG_TMP/host-b.pid")
ip link add nga netns "$PA" type veth peer name ngb netns "$PB" 2>"$NG_TMP/veth.err" ||
	{ echo "SKIP: C: no veth pair: $(cat "$NG_TMP/veth.err")"; echo ok; exit 0; }
nsenter -t "$PA" -n sh -c 'ip addr add 10.252.0.1/24 dev nga && ip link set nga up' ||
	fail "host-a's address"
nsenter -t "$PB" -n sh -c 'ip addr add 10.252.0.2/24 dev ngb && ip link set ngb up' ||
	fail "host-b's address"

hw_fake_host "$NG_TMP/root-a" 2
hw_fake_host "$NG_TMP/root-b" 2
# host HOST FIRST: on HOST, `ncclguard run` of ranks FIRST and FIRST+1 of
# 4 (local ranks 0 and 1, so GPUs 0 and 1), in the background.
host() {
	in_host "$1" env NCCLGUARD_SYSROOT="$NG_TMP/root-${1#host-}" NCCLGUARD_JOB=hwjob \
		"$NG_BIN" run -o "$NG_TMP/C" --health-interval 0.2 --timeout 8 --on-timeout exit \
		--inject 'delay:ms=4000,rank=2,seq=5;stall:rank=2,seq=6' -- sh -c "
		pids=
		for l in 0 1; do
			RANK=\$(($2 + l)) WORLD_SIZE=4 LOCAL_RANK=\$l '$EXAMPLE' --id-tcp 10.252.0.1:29712 \
				--min-bytes 1K --max-bytes 1K --iters 10 --warmup 0 --sync &
			pids=\"\$pids \$!\"
		done
		rc=0
		for p in \$pids; do wait \$p || rc=\$?; done
		exit \$rc" >"$NG_TMP/$1.out" 2>"$NG_TMP/$1.err" &
}
host host-a 0
pa=$!
host host-b 2
pb=$!
wait_for "$NG_TMP/host-b.err" "injecting delay"
hw_set "$NG_TMP/root-b" sys/class/infiniband/mlx5_0/ports/1/counters/link_downed 1
hw_set "$NG_TMP/root-a" sys/class/net/eth0/statistics/rx_dropped 12
hw_set "$NG_TMP/root-a" sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error 3
hw_set "$NG_TMP/root-a" sys/class/infiniband/mlx5_1/ports/1/counters/local_link_integrity_errors 15
wait $pa && fail "host-a's ranks ended well while rank 2 stalled"
wait $pb && fail "host-b's ranks ended well while rank 2 stalled"
analyze_json "$NG_TMP/C"
python3 - "$NG_TMP/C.json" <<'PY' || { cat "$NG_TMP/C.sum"; fail "see above"; }
import json, re, sys
r = json.load(open(sys.argv[1]))
assert len(r['hangs']) == 1, r['hangs']
hw = {(h['host'], h['device'], h['counter']): h for h in r['hardware']}
ld = hw[('host-b', 'mlx5_0/1', 'link_downed')]
assert ld['before'] == 0 and ld['after'] == 1 and 2 in ld['ranks'], ld
assert ('host-a', 'eth0', 'rx_dropped') in hw and ('host-a', 'mlx5_1/1', 'symbol_error') in hw, hw
sat = hw[('host-a', 'mlx5_1/1', 'local_link_integrity_errors')]
assert sat['after'] == 15 and sat.get('saturated') is True, sat
assert hw[('host-a', 'eth0', 'rx_dropped')]['ranks'] == [], hw
f = [f for f in r['findings'] if f['kind'] == 'hardware']
assert len(f) == 1, r['findings']
s = f[0]['summary']
assert "likely cause: host host-b's mlx5_0 port 1" in s and 'link_downed +1' in s, s
assert re.search(r' s before allreduce seq 6 stalled', s), s
assert f[0]['ranks'] == [2] and f[0]['hosts'] == ['host-b'], f[0]
# the waiting rank 1's NIC's errors may be named beside it; the NIC no
# rank uses never is
for g in r['findings']:
    assert 'eth0' not in g['summary'], g
PY
echo "ok"
