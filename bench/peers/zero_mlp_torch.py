#!/usr/bin/python3
"""The PyTorch peer of bench/zero_bench: a large MLP trained with Adam by processes with
DistributedDataParallel over gloo (CPU, loopback), plain (torch.optim.Adam on every rank) or with
torch.distributed.optim.ZeroRedundancyOptimizer(Adam) (ZeRO-1: each rank keeps the Adam state of
its share of the parameters, then broadcasts them), one torch and one OpenBLAS thread each.

Usage: /usr/bin/python3 bench/peers/zero_mlp_torch.py [--mode ddp|zero] [--world 2]
           [--hidden 4096] [--layers 7] [--batch 8] [--warmup 1] [--steps 3] [--cores default]

Model (zero_bench's): Linear(1024, H), then (ReLU, Linear(H, H)) x (layers - 1), ReLU,
Linear(H, 10). Protocol (zero_bench's): one fixed random batch per rank; a step is zero_grad +
forward + cross-entropy + backward (DDP's bucketed all-reduce) + Adam(lr 1e-4); a barrier before
each step; `warmup` untimed then `steps` timed steps; a step's time is the maximum over the
ranks; the median.
Output: "P <median ms> 0 <peak RSS bytes, the maximum over the ranks>" (torch has no CPU
allocator counter: the 0).
"""
import argparse
import os
import resource
import socket
import statistics
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, args, port, results):
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.optim import ZeroRedundancyOptimizer

    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.world)
    torch.manual_seed(0)
    layers = [nn.Linear(1024, args.hidden)]
    for _ in range(args.layers - 1):
        layers += [nn.ReLU(), nn.Linear(args.hidden, args.hidden)]
    layers += [nn.ReLU(), nn.Linear(args.hidden, 10)]
    model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers))
    if args.mode == "zero":
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                            lr=1e-4)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(args.batch, 1024, generator=generator)
    y = torch.randint(0, 10, (args.batch,), generator=generator)
    times = torch.zeros(args.steps, dtype=torch.float64)
    for step in range(args.warmup + args.steps):
        dist.barrier()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y, reduction="sum")
        loss.backward()
        optimizer.step()
        if step >= args.warmup:
            times[step - args.warmup] = time.perf_counter() - start
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    rss = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024],
                       dtype=torch.int64)
    dist.all_reduce(rss, op=dist.ReduceOp.MAX)
    dist.destroy_process_group()
    if rank == 0:
        results.put((sorted(times.tolist()), int(rss.item())))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["ddp", "zero"], default="ddp")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=7)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cores", default="default")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ.pop("OPENBLAS_CORETYPE", None)
    if args.cores != "default":
        os.environ["OPENBLAS_CORETYPE"] = args.cores
    import torch
    import torch.multiprocessing as mp

    print(f"# torch {torch.__version__}: DDP over gloo, {args.mode}, {args.world} processes",
          flush=True)
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(rank_main, args=(args, free_port(), results), nprocs=args.world, join=True)
    times, rss = results.get()
    print(f"P {statistics.median(times) * 1e3:.3f} 0 {rss}", flush=True)


if __name__ == "__main__":
    main()
