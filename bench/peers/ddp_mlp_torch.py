#!/usr/bin/python3
"""The PyTorch peer of bench/ddp_bench: the MLP of mlp_train_torch.py trained by processes with
DistributedDataParallel over gloo (CPU, TCP on loopback), one torch and one OpenBLAS thread each.

Usage: /usr/bin/python3 bench/peers/ddp_mlp_torch.py [--world 2] [--cores default SkylakeX]
(ddp_bench runs it with --cores SkylakeX and parses the table.)

Cases, per OpenBLAS core type: one process without DDP at batch 128 and 64 (the references),
DDP weak scaling (batch 128 per rank) and strong scaling (batch 64 per rank, global 128).
Protocol (ddp_bench's): 16 fixed random batches per rank (x ~ N(0, 1), labels uniform), a step
is zero_grad + forward + loss + backward (DDP's bucketed, averaged all-reduce) + SGD(lr 0.01,
momentum 0.9); 20 warm-up and 200 timed steps; a step's time is the maximum over the ranks;
median, p10, p90; samples/s = world x batch / median.
Output: a header line, then per case: the case name in 22 columns, core, world, batch per rank,
med_ms, p10, p90, samples/s, last loss.
"""
import argparse
import os
import socket
import statistics
import time

CASE_WIDTH = 22


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, port, batch, results, warmup=20, steps=200):
    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    if world > 1:
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world)
    torch.manual_seed(0)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    inputs = [torch.randn(batch, 784, generator=generator) for _ in range(16)]
    labels = [torch.randint(0, 10, (batch,), generator=generator) for _ in range(16)]
    times = torch.zeros(steps, dtype=torch.float64)
    for step in range(warmup + steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(inputs[step % 16]), labels[step % 16])
        loss.backward()
        optimizer.step()
        if step >= warmup:
            times[step - warmup] = time.perf_counter() - start
    if world > 1:
        dist.all_reduce(times, op=dist.ReduceOp.MAX)  # a step lasts as long as its slowest rank
        dist.destroy_process_group()
    if rank == 0:
        results.put((sorted(times.tolist()), loss.item()))


def run_case(world, batch):
    import torch.multiprocessing as mp

    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(rank_main, args=(world, free_port(), batch, results), nprocs=world, join=True)
    return results.get()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--cores", nargs="+", default=["default", "SkylakeX"])
    args = parser.parse_args()
    # Read by OpenMP and OpenBLAS when each spawned process starts.
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    import torch

    print(f"# torch {torch.__version__}: DDP over gloo (CPU), MLP 784-512-512-10, "
          f"1 torch + 1 OpenBLAS thread per process", flush=True)
    print(f"{'case':<{CASE_WIDTH}} core world b/rank med_ms p10 p90 samples/s last_loss")
    cases = [("1proc ref b128", 1, 128), ("1proc ref b64", 1, 64),
             ("DDP weak (b128/rank)", args.world, 128), ("DDP strong (b64/rank)", args.world, 64)]
    for core in args.cores:
        os.environ.pop("OPENBLAS_CORETYPE", None)
        if core != "default":
            os.environ["OPENBLAS_CORETYPE"] = core
        for name, world, batch in cases:
            times, loss = run_case(world, batch)
            median = statistics.median(times)
            print(f"{name:<{CASE_WIDTH}} {core} {world} {batch} {median * 1e3:.3f} "
                  f"{times[len(times) // 10] * 1e3:.3f} {times[len(times) * 9 // 10] * 1e3:.3f} "
                  f"{world * batch / median:.0f} {loss:.4f}", flush=True)


if __name__ == "__main__":
    main()
