#!/usr/bin/env python3
"""The shim's cost on a DDP step, in one process (issue 7's 1% goal).

    NG_TOGGLE_OFFSET=N torchrun --standalone --nproc_per_node=1 bench/ddp_ab.py

Between processes the step time of examples/train_ddp.py varies by 10% and
more, far beyond the effect to measure, so this runs its step (imported:
the model, the gradient all-reduce, the loss all-reduce) in blocks that
alternate, in one process, between the shim switched off and the shim at
work.  Off is the shim's own NCCLGUARD_DISABLE flag, written here between
blocks at its address in libncclguard.so (NG_TOGGLE_OFFSET: the offset of
ng_hotcfg.cfg.disabled, which bench/gpu_overhead.sh finds with nm and the
header): a disabled call is forwarded at once, so the off blocks carry
only the wrapper's forwarding (about 20 ns a call on an 8-byte all-reduce
loop, RESULTS.md).  Without the shim the flag is a dummy: an A/A run, the
noise floor.  Prints the median over blocks of the per-pair ratio (on/off)
of the blocks' median step times, and appends each pair's (%) to
NG_AB_PAIRS.
"""
import argparse
import ctypes
import os
import sys

import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from train_ddp import add_model_args, init_distributed, make_step  # noqa: E402


def shim_flag():
    """The shim's `disabled` flag, or a dummy when the shim is not loaded."""
    off = os.environ.get("NG_TOGGLE_OFFSET")
    if off:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()
                if len(p) >= 6 and p[5].endswith("/libncclguard.so") and int(p[2], 16) == 0:
                    base = int(p[0].split("-")[0], 16)
                    return ctypes.c_int.from_address(base + int(off, 0)), True
    return ctypes.c_int(0), False


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=100, help="pairs of blocks")
    p.add_argument("--block-steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=30)
    add_model_args(p)
    p.set_defaults(hidden=256)
    args = p.parse_args()

    local_rank, rank, world = init_distributed()
    flag, have_shim = shim_flag()
    if os.environ.get("NG_TOGGLE_OFFSET") and not have_shim:
        raise SystemExit("ddp_ab: NG_TOGGLE_OFFSET set but libncclguard.so is not mapped")

    train_step = make_step(args, local_rank, rank, world)

    def step():
        return train_step()[1]

    def block(off):
        # Every rank switches at the same step: the calls stay matched.
        flag.value = 1 if off else 0
        t = median([step() for _ in range(args.block_steps)])
        flag.value = 0
        return t

    for _ in range(args.warmup):
        step()
    ratios, on_t, off_t = [], [], []
    for b in range(args.blocks):
        # ABBA: the drift within a pair cancels over two pairs.
        if b % 2:
            t_on, t_off = block(False), block(True)
        else:
            t_off, t_on = block(True), block(False)
        ratios.append(t_on / t_off)
        on_t.append(t_on)
        off_t.append(t_off)
    pairs = os.environ.get("NG_AB_PAIRS")
    if rank == 0 and pairs:		# for pooling over processes
        with open(pairs, "a") as f:
            f.write("".join(f"{100 * (x - 1):.4f}\n" for x in ratios))
    if rank == 0:
        r = sorted(ratios)
        q1, q3 = r[len(r) // 4], r[(3 * len(r)) // 4]
        print(f"ddp_ab shim {'loaded' if have_shim else 'absent (A/A)'}; "
              f"{args.blocks} pairs of {args.block_steps} steps; "
              f"calls with the shim on: {2 * (args.warmup + args.blocks * args.block_steps)}",
              flush=True)
        print(f"step ms off {1e3 * median(off_t):.4f} on {1e3 * median(on_t):.4f}", flush=True)
        print(f"ratio on/off median {100 * (median(ratios) - 1):+.3f}% "
              f"IQR {100 * (q1 - 1):+.2f}%..{100 * (q3 - 1):+.2f}%", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
