#!/usr/bin/env python3
"""A small PyTorch DDP job: the client ncclguard is first shown on.

    torchrun --nproc_per_node=N examples/train_ddp.py [--steps 50]
    ncclguard run -- torchrun --nproc_per_node=N examples/train_ddp.py

Deterministic: the same seed gives the same losses with and without the
shim, which is how the shim is shown not to change results.  Prints one
"step S loss L" line per step on rank 0 and, at the end, the mean step time
after warm-up ("step_time_ms ...") for the overhead measurements.
"""
import argparse
import os
import time

# PyTorch is imported where it is used, after the options are read, so
# that --help answers on a machine without it.


def init_distributed():
    """Join the job's process group on this rank's GPU: (local_rank, rank, world)."""
    import torch
    import torch.distributed as dist

    # With a policy that pins each local rank to its GPU (pin = local_rank),
    # the process sees only that GPU, as device 0: the usual idiom
    # LOCAL_RANK % device_count() picks the right one either way.
    local_rank = int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    return local_rank, dist.get_rank(), dist.get_world_size()


def make_step(args, local_rank, rank, world):
    """The model, its optimiser and data; returns step(), which trains one
    batch and returns the global mean loss and the step's time (s)."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(args.seed)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
    layers.append(nn.Linear(args.hidden, 10))
    model = nn.Sequential(*layers).cuda()
    ddp = DDP(model, device_ids=[local_rank], bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    # Each rank its own data, reproducibly.
    g = torch.Generator(device="cuda").manual_seed(args.seed + rank)

    def step():
        x = torch.randn(args.batch, args.hidden, device="cuda", generator=g)
        y = torch.randint(0, 10, (args.batch,), device="cuda", generator=g)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        # The global mean loss: one more all-reduce, and identical on all ranks.
        lt = loss.detach().clone()
        dist.all_reduce(lt)
        lt /= world
        torch.cuda.synchronize()
        return lt, time.perf_counter() - t0

    return step


def add_model_args(p):
    p.add_argument("--batch", type=int, default=64, help="samples per step and rank")
    p.add_argument("--hidden", type=int, default=1024, help="width of each layer")
    p.add_argument("--layers", type=int, default=4, help="hidden layers")
    p.add_argument("--seed", type=int, default=1234, help="the same seed, the same losses")
    p.add_argument("--bucket-mb", type=float, default=25.0,
                   help="DDP gradient bucket size (smaller: more all-reduces)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--steps", type=int, default=50, help="training steps")
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the mean time")
    add_model_args(p)
    args = p.parse_args()

    import torch.distributed as dist

    local_rank, rank, world = init_distributed()
    step = make_step(args, local_rank, rank, world)
    times = []
    for i in range(args.steps):
        lt, t = step()
        if i >= args.warmup:
            times.append(t)
        if rank == 0:
            print(f"step {i} loss {lt.item():.6f}", flush=True)
    if rank == 0 and times:
        times.sort()
        print(f"step_time_ms mean {1e3 * sum(times) / len(times):.4f} "
              f"median {1e3 * times[len(times) // 2]:.4f} steps {len(times)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
