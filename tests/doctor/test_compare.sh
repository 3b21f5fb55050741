#!/bin/sh
# `ncclguard doctor --compare`: the files of fake hosts, as
# `srun ncclguard doctor --json DIR/%h.json` writes them.  Differences in
# MTU, NCCL version, GPU clocks and IB MTU are found and marked (exit 1);
# counters are shown per host without marking them; identical hosts give
# nothing (exit 0); a file that is not a doctor file is one line on stderr
# and exit 2, never a crash.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/doctor/fakehost.sh"
D="$NG_TMP/hosts"
O="$NG_TMP/out"
mkdir -p "$D"

# compare ARGS...: stdout in $O, stderr in $O.err, exit status in $rc.
compare() {
	rc=0
	"$NG_BIN" doctor --compare "$@" >"$O" 2>"$O.err" || rc=$?
}

note "two identical hosts: no difference, exit 0"
dr_fake_host "$NG_TMP/a" node-a
dr_doctor "$NG_TMP/a" "$NG_TMP/a.out" --json "$D/%h.json"
dr_fake_host "$NG_TMP/b" node-b
dr_doctor "$NG_TMP/b" "$NG_TMP/b.out" --json "$D/%h.json"
[ -f "$D/node-a.json" ] && [ -f "$D/node-b.json" ] || fail "--json DIR/%h.json"
compare "$D"
cat "$O" "$O.err"
assert_eq "$rc" 0 "exit status"
assert_grep "^ncclguard doctor --compare: 2 hosts: node-a, node-b" "$O"
assert_grep "no difference between the 2 hosts" "$O"
compare "$D/node-a.json" "$D/node-b.json"
assert_eq "$rc" 0 "exit status (files)"

note "another MTU and another NCCL: both found and marked, exit 1"
dr_fake_host "$NG_TMP/c" node-c mtu9000
NCCLSIM_VERSION=22703 dr_doctor "$NG_TMP/c" "$NG_TMP/c.out" --json "$D/%h.json"
compare "$D"
cat "$O" "$O.err"
assert_eq "$rc" 1 "exit status"
assert_grep "^  BREAKS  net.mtu.eth0  *1500: node-a, node-b | 9000: node-c$" "$O"
assert_grep "^  BREAKS  nccl.version  *2.28.9: node-a, node-b | 2.27.3: node-c$" "$O"
assert_grep "NCCL needs one version on every rank" "$O"
assert_grep "^2 differences, 2 that break or slow NCCL$" "$O"
# Only what differs.
assert_no_grep "gpu.model" "$O"
assert_no_grep "driver.version" "$O"

note "a difference that neither breaks nor slows NCCL: shown, exit 0"
rm "$D/node-c.json"
dr_fake_host "$NG_TMP/c" node-c
printf 'synced 1\noffset_us 5000\nmaxerror_us 500\n' >"$NG_TMP/c/proc/ncclguard_timex"
NCCL_DEBUG=INFO dr_doctor "$NG_TMP/c" "$NG_TMP/c.out" --json "$D/%h.json"
compare "$D"
cat "$O"
assert_eq "$rc" 0 "exit status"
assert_grep "^  differs nccl.env  *none set: node-a, node-b | NCCL_DEBUG=INFO: node-c$" "$O"
assert_grep "^  differs clock.offset " "$O"
# Offsets within a millisecond of each other are the same.
printf 'synced 1\noffset_us 700\nmaxerror_us 500\n' >"$NG_TMP/c/proc/ncclguard_timex"
dr_doctor "$NG_TMP/c" "$NG_TMP/c.out" --json "$D/%h.json"
compare "$D"
assert_eq "$rc" 0 "exit status"
assert_no_grep "clock.offset" "$O"

note "a host with fewer GPUs and a port down: marked"
dr_fake_host "$NG_TMP/c" node-c ibdown
sed -i '/^gpu\.3\./d' "$NG_TMP/c/nvml.conf"
dr_doctor "$NG_TMP/c" "$NG_TMP/c.out" --json "$D/%h.json"
compare "$D"
cat "$O"
assert_eq "$rc" 1 "exit status"
assert_grep "^  BREAKS  gpu.count  *4: node-a, node-b | 3: node-c$" "$O"
assert_grep "^  SLOWS   ib.port.mlx5_1:1 " "$O"
assert_grep "^failed checks on: node-c (1)$" "$O"

note "GPU clocks locked on one host only: marked, exit 1"
dr_fake_host "$NG_TMP/c" node-c lockall
dr_doctor "$NG_TMP/c" "$NG_TMP/c.out" --json "$D/%h.json"
compare "$D"
cat "$O"
assert_eq "$rc" 1 "exit status"
assert_grep "^  SLOWS   gpu.clocks  *default: node-a, node-b | locked: node-c$" "$O"
assert_grep "the slowest GPU paces every collective" "$O"
assert_grep "^1 difference, 1 that breaks or slows NCCL$" "$O"

note "another IB MTU on one host: marked, exit 1"
dr_fake_host "$NG_TMP/c" node-c ibmtu
dr_doctor "$NG_TMP/c" "$NG_TMP/c.out" --json "$D/%h.json"
compare "$D"
cat "$O"
assert_eq "$rc" 1 "exit status"
assert_grep "^  SLOWS   ib.mtu  *4096: node-a, node-b | 4096: mlx5_0:1; 2048: mlx5_1:1: node-c$" "$O"

note "counters differ: shown per host as a baseline, exit 0"
dr_fake_host "$NG_TMP/c" node-c counters
dr_doctor "$NG_TMP/c" "$NG_TMP/c.out" --json "$D/%h.json"
compare "$D"
cat "$O"
assert_eq "$rc" 0 "exit status"
assert_grep "^  differs gpu.counters  *0 on 4 GPUs: node-a, node-b | GPU 2: ecc.corrected 3, pcie.replay 12, nvlink5.crc 7: node-c$" "$O"
assert_grep "^  differs ib.counters  *0 on 2 ports: node-a, node-b | mlx5_1:1: link_downed 255 (saturated), symbol_error 12: node-c$" "$O"
assert_grep "^  differs net.counters .*rx_errors 5" "$O"
assert_grep "^3 differences, 0 that break or slow NCCL$" "$O"
rm "$D/node-c.json"

# bad WHAT: exit 2, one line on stderr naming the file, nothing on stdout.
bad() {
	assert_eq "$rc" 2 "$1: exit status"
	assert_eq "$(wc -l <"$O.err")" 1 "$1: lines on stderr"
	assert_eq "$(wc -c <"$O")" 0 "$1: bytes on stdout"
	assert_grep "^ncclguard doctor --compare: " "$O.err"
}

note "files that are not doctor files: one line, exit 2"
B="$NG_TMP/bad.json"
printf '{"schema": "ncclguard-doctor/1", "host": "x", "time": "t", "checks": [\n  {"id": "a.b", "status": "ok", "value": "1",}\n]}\n' >"$B"
compare "$D/node-a.json" "$B"
bad "trailing comma"
assert_grep "bad.json: not a doctor file: line 2, column 46: a key (a string) expected$" "$O.err"
printf '{"schema": "ncclguard-report/1", "host": "x", "time": "t", "checks": []}' >"$B"
compare "$D/node-a.json" "$B"
bad "another schema"
assert_grep "schema is not ncclguard-doctor/1" "$O.err"
printf '{"schema": "ncclguard-doctor/1", "host": "x", "time": "t", "checks": [{"id": "a.b", "status": "meh", "value": ""}]}' >"$B"
compare "$D/node-a.json" "$B"
bad "a bad status"
assert_grep "check 1: status must be ok, warn, fail or skip" "$O.err"
head -c 300 "$D/node-a.json" >"$B"
compare "$D/node-a.json" "$B"
bad "a file cut short"
printf '\000\377\376garbage' >"$B"
compare "$B" "$D/node-a.json"
bad "binary"
compare "$D/node-a.json" "$NG_TMP/missing.json"
bad "a missing file"
assert_grep "missing.json: No such file or directory" "$O.err"
compare "$D/node-a.json"
bad "one host"
assert_grep "needs the files of two hosts or more (1 given)" "$O.err"
mkdir "$NG_TMP/empty"
compare "$NG_TMP/empty" "$D"
bad "an empty folder"
echo ok
