#!/bin/sh
# ncclguard policy check: errors with file and line (exit 1), what the file
# does on this (fake) host per local rank, exit 3 when it would stop a job.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/policy/fakehost.sh"
ng_fake_host "$NG_TMP/host"
mkdir -m 700 "$NG_TMP/etc"
P="$NG_TMP/etc/p.conf"
export NCCLGUARD_SYSROOT="$NG_TMP/host"
unset NCCL_SOCKET_IFNAME NCCL_IB_HCA LOCAL_WORLD_SIZE 2>/dev/null

note "malformed"
printf '[env]\nNCCL_X = enforce\n[netwrk]\nfoo = 1\n[devices]\ngpus = a\n' >"$P"
"$NG_BIN" policy check "$P" >"$NG_TMP/o" 2>"$NG_TMP/e"
assert_eq "$?" 1 "exit status, malformed"
assert_grep "^$P:2: NCCL_X = enforce needs a value" "$NG_TMP/e"
assert_grep "^$P:3: unknown section \[netwrk\]" "$NG_TMP/e"
assert_grep "^$P:6: gpus: 'a' is not a GPU index" "$NG_TMP/e"
assert_grep "is not valid (3 errors)" "$NG_TMP/e"

note "valid, per local rank"
cp "$NG_ROOT/examples/policy/site.conf" "$P"
chmod 600 "$P"
"$NG_BIN" policy check "$P" >"$NG_TMP/o" 2>"$NG_TMP/e"
rc=$?
cat "$NG_TMP/o"
# The example wants mlx5_1:1, which is down on the fake host.
assert_eq "$rc" 3 "exit status, example policy on the fake host"
assert_grep "local rank 3:" "$NG_TMP/o"
assert_grep "=> CUDA_VISIBLE_DEVICES=2, CUDA_DEVICE_ORDER=PCI_BUS_ID (GPU 2 at 0000:86:00.0), NUMA node 1" "$NG_TMP/o"
assert_grep "VIOLATION NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 selects mlx5_1:1, which is not active" "$NG_TMP/o"
assert_grep "NCCL_SOCKET_IFNAME==ib0 selects ib0" "$NG_TMP/o"

sed -i 's/^NCCL_IB_HCA .*/NCCL_IB_HCA = enforce =mlx5_0:1/' "$P"
"$NG_BIN" policy check "$P" >"$NG_TMP/o" 2>"$NG_TMP/e"
assert_eq "$?" 0 "exit status, policy that fits the host"
assert_grep "result: ok" "$NG_TMP/o"
assert_grep "trust: ok" "$NG_TMP/o"

note "--local-ranks beyond gpus"
"$NG_BIN" policy check "$P" --local-ranks 5 >"$NG_TMP/o" 2>"$NG_TMP/e"
assert_eq "$?" 3 "exit status, 5 local ranks for 4 GPUs"
assert_grep "local rank 4 has no GPU" "$NG_TMP/o"

note "--local-ranks 8: one block per distinct plan, what all share said once"
G="$NG_TMP/etc/g.conf"
cp "$NG_ROOT/examples/policy/ethernet.conf" "$G"
chmod 600 "$G"
"$NG_BIN" policy check "$G" --local-ranks 8 >"$NG_TMP/o" 2>"$NG_TMP/e"
assert_eq "$?" 0 "exit status, ethernet example"
assert_grep "^local ranks 0-7:$" "$NG_TMP/o"
assert_eq "$(grep -c "^local rank" "$NG_TMP/o")" 1 "blocks for 8 identical ranks"
assert_eq "$(grep -c "NCCL_IB_DISABLE=1 (enforced" "$NG_TMP/o")" 1 "a shared line, printed once"
cp "$NG_ROOT/examples/policy/single-node.conf" "$G"
chmod 600 "$G"
"$NG_BIN" policy check "$G" --local-ranks 8 >"$NG_TMP/o" 2>"$NG_TMP/e"
assert_eq "$?" 0 "exit status, single-node example"
assert_grep "^every local rank (0-7):$" "$NG_TMP/o"
assert_eq "$(grep -c "NCCL_P2P_DISABLE is forbidden" "$NG_TMP/o")" 1 "a shared line, printed once"
assert_grep "^local rank 5:$" "$NG_TMP/o"
assert_grep "=> CUDA_VISIBLE_DEVICES=5, CUDA_DEVICE_ORDER=PCI_BUS_ID (GPU 5" "$NG_TMP/o"
[ "$(wc -l <"$NG_TMP/o")" -le 50 ] || fail "8 pinned ranks in $(wc -l <"$NG_TMP/o") lines"

note "untrusted"
chmod 666 "$P"
"$NG_BIN" policy check "$P" >"$NG_TMP/o" 2>"$NG_TMP/e"
assert_eq "$?" 3 "exit status, writable policy"
assert_grep "trust: REFUSED" "$NG_TMP/o"

note "usage"
"$NG_BIN" policy check >/dev/null 2>&1
assert_eq "$?" 2 "exit status, no file"
"$NG_BIN" policy check "$NG_TMP/none.conf" 2>"$NG_TMP/e"
assert_eq "$?" 1 "exit status, missing file"
assert_grep "none.conf: cannot read" "$NG_TMP/e"
echo ok
