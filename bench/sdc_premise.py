# Does every rank hold bitwise the same output of an all-reduce (sum, avg,
# premul-sum), an all-gather and a broadcast?  Each rank runs them on its
# own random tensors, rank 0 gathers every output and compares bits; one
# line per case that differs, then the count of cases that differ.  Ranks
# as hosts of their own on one GPU:
#   NCCL_ALGO="allreduce:tree" NCCL_PROTO=LL CASE=tree/LL torchrun --standalone \
#       --nproc_per_node=4 --no-python tests/gpu/fakehost.sh python3 bench/sdc_premise.py
# tests/gpu/run.sh stage 21 runs it under `ncclguard run --verify all`.
import os, torch, torch.distributed as dist

def differ(outs, dt):
    iv = torch.int16 if dt != torch.float32 else torch.int32
    a = outs[0].view(iv)
    return sum(int((o.view(iv) != a).sum()) for o in outs[1:])

def main():
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    tag = os.environ.get("CASE", "default")
    ops = [("sum", dist.ReduceOp.SUM), ("avg", dist.ReduceOp.AVG),
           ("premul", dist._make_nccl_premul_sum(0.37))]
    bad = cases = 0
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for n in (1 << 10, 1 << 16, 1 << 20, 1 << 22):
            g = torch.Generator(device="cuda").manual_seed(1000 + rank * 7 + n)
            tests = []
            for name, op in ops:
                x = torch.randn(n, device="cuda", dtype=dt, generator=g)
                dist.all_reduce(x, op=op)
                tests.append(("allreduce " + name, x))
            y = torch.randn(n // world * world, device="cuda", dtype=dt, generator=g)
            ag = torch.empty(n // world * world, device="cuda", dtype=dt)
            dist.all_gather_into_tensor(ag, y[: n // world])
            tests.append(("allgather", ag))
            b = torch.randn(n, device="cuda", dtype=dt, generator=g)
            dist.broadcast(b, src=world - 1)
            tests.append(("broadcast", b))
            for name, x in tests:
                outs = [torch.empty_like(x) for _ in range(world)]
                dist.all_gather(outs, x)
                torch.cuda.synchronize()
                if rank == 0:
                    d = differ(outs, dt); cases += 1; bad += d != 0
                    if d:
                        print(f"{tag}: {name} {str(dt)[6:]} {n}: {d} elements differ")
    if rank == 0:
        print(f"{tag}: ranks {world}: cases differing: {bad} of {cases}")
    dist.destroy_process_group()

main()
