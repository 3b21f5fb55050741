#!/bin/sh
# torchrun on several hosts: each host runs its own `ncclguard run --
# torchrun ...`, so no launcher variable names the job; the arguments the
# hosts share do.  Two "hosts" (two runs) of one multi-node torchrun get
# one job id; a single-node torchrun and another rendezvous get their own;
# torchrun's options after the script are the script's.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
unset NCCLGUARD_JOB SLURM_JOB_ID

# A torchrun that only says which job it was given.
mkdir -p "$NG_TMP/bin"
printf '#!/bin/sh\necho "job=$NCCLGUARD_JOB"\n' >"$NG_TMP/bin/torchrun"
chmod +x "$NG_TMP/bin/torchrun"
TR="$NG_TMP/bin/torchrun"

jobof() {	# jobof NAME ARGS...: the job id `run` gave the command
	_n=$1; shift
	"$NG_BIN" run -o "$NG_TMP/$_n" -- "$@" >"$NG_TMP/$_n.out" 2>"$NG_TMP/$_n.err" ||
		{ cat "$NG_TMP/$_n.err"; fail "$_n: run failed"; }
	sed -n 's/^job=//p' "$NG_TMP/$_n.out"
}

note "two hosts of one rendezvous: one job"
a=$(jobof a "$TR" --nnodes=2 --node-rank=0 --rdzv-endpoint=h1:29400 --rdzv_id=77 train.py)
b=$(jobof b "$TR" --nnodes 2 --node_rank 1 --rdzv_endpoint h1:29400 --rdzv-id 77 train.py)
assert_eq "$a" "torchrun-h1:29400-77" "host 0's job"
assert_eq "$b" "$a" "host 1's job"

note "master address and port, python -m torch.distributed.run"
c=$(jobof c "$TR" --nnodes=2 --master_addr=10.0.0.1 --master_port=29500 train.py)
assert_eq "$c" "torchrun-10.0.0.1:29500-none" "master form"
printf '#!/bin/sh\necho "job=$NCCLGUARD_JOB"\n' >"$NG_TMP/bin/python3"
chmod +x "$NG_TMP/bin/python3"
d=$(jobof d "$NG_TMP/bin/python3" -m torch.distributed.run --nnodes=2:4 --rdzv-endpoint=h2 train.py)
assert_eq "$d" "torchrun-h2-none" "python -m form"

note "one node, or the script's own --nnodes: an id of this run"
e=$(jobof e "$TR" --nnodes=1 --rdzv-endpoint=h1:29400 train.py)
f=$(jobof f "$TR" --standalone train.py --nnodes=2 --rdzv-endpoint=h1:29400)
case "$e$f" in *torchrun-*) fail "single-node torchrun took a shared id: $e / $f" ;; esac
[ -n "$e" ] && [ "$e" != "$f" ] || fail "single-node runs share an id: '$e' '$f'"

note "NCCLGUARD_JOB still wins"
g=$(NCCLGUARD_JOB=mine jobof g "$TR" --nnodes=2 --rdzv-endpoint=h1:29400 train.py)
assert_eq "$g" "mine" "NCCLGUARD_JOB"
echo "PASS torchrun job"
