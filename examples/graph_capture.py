#!/usr/bin/env python3
"""NCCL collectives captured into a CUDA graph and replayed.

    torchrun --nproc_per_node=N examples/graph_capture.py

Under ncclguard the captured calls are marked (coll_enqueue captured=1) and
nothing is recorded on a capturing stream; the replays run untouched.
"""
import argparse
import os


def main():
    # No options; read first so that --help answers without PyTorch.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    import torch
    import torch.distributed as dist

    # With a policy that pins each local rank to its GPU (pin = local_rank),
    # the process sees only that GPU, as device 0: the usual idiom
    # LOCAL_RANK % device_count() picks the right one either way.
    local_rank = int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    world = dist.get_world_size()
    x = torch.ones(1 << 16, device="cuda")

    # Warm up on a side stream, as graph capture requires.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            dist.all_reduce(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()

    g = torch.cuda.CUDAGraph()
    x.fill_(1.0)
    with torch.cuda.graph(g):
        dist.all_reduce(x)
        x.div_(world)
    replays = 20
    x.fill_(1.0)
    for _ in range(replays):
        g.replay()
    # An eager collective after the graph: traced as usual.
    dist.all_reduce(x)
    torch.cuda.synchronize()
    ok = abs(x[0].item() - world) < 1e-6
    if dist.get_rank() == 0:
        print(f"graph replays {replays} result {x[0].item():.3f} {'ok' if ok else 'WRONG'}", flush=True)
    # The graph first: across hosts NCCL keeps a captured collective's
    # network operations in its proxy thread until the graph is freed, and
    # destroying the process group waits for that thread for ever.
    del g
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
