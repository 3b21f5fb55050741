# Does every rank hold bitwise the same output of an all-reduce (sum, avg,
# premul-sum)?  Each rank reduces its own random tensors, rank 0 gathers
# every output and compares bits; one line per case, then the count of
# cases that differ.  Ranks as hosts of their own on one GPU:
#   NCCL_ALGO="allreduce:tree" NCCL_PROTO=LL CASE=tree/LL torchrun --standalone \
#       --nproc_per_node=4 --no-python tests/gpu/fakehost.sh python3 bench/sdc_premise.py
import os

import torch
import torch.distributed as dist

def main():
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    tag = os.environ.get("CASE", "default")
    ops = [("sum", dist.ReduceOp.SUM), ("avg", dist.ReduceOp.AVG)]
    try:
        ops.append(("premul", dist._make_nccl_premul_sum(0.37)))
    except Exception as e:
        if rank == 0: print(f"{tag}: premul-sum unavailable: {e}")
    bad = 0
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for n in (1 << 10, 1 << 16, 1 << 20, 1 << 22):
            g = torch.Generator(device="cuda").manual_seed(1000 + rank * 7 + n)
            for name, op in ops:
                x = torch.randn(n, device="cuda", dtype=dt, generator=g)
                dist.all_reduce(x, op=op)
                outs = [torch.empty_like(x) for _ in range(world)]
                dist.all_gather(outs, x)
                torch.cuda.synchronize()
                if rank == 0:
                    a = outs[0].view(torch.int16 if dt != torch.float32 else torch.int32)
                    diff = sum(int((o.view(a.dtype) != a).sum()) for o in outs[1:])
                    bad += diff != 0
                    print(f"{tag}: allreduce {name:6s} {str(dt)[6:]:8s} {n:>9d}: "
                          f"{'identical' if diff == 0 else f'{diff} elements differ'}")
    if rank == 0:
        print(f"{tag}: cases differing: {bad}")
    dist.destroy_process_group()

main()
