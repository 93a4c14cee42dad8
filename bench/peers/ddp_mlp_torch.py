#!/usr/bin/python3
"""The PyTorch peer of bench/ddp_bench: an MLP trained by processes with DistributedDataParallel
over gloo (CPU, TCP on loopback), one torch and one OpenBLAS thread each, DDP's default buckets
(bucket_cap_mb 25, the first bucket 1 MiB).

Usage: /usr/bin/python3 bench/peers/ddp_mlp_torch.py [--model mlp|wide] [--world 2] [--batch 128]
           [--warmup 20] [--steps 200] [--cores default|SkylakeX]
(ddp_bench runs it once per model and world size and reads its P line.)

Models (ddp_bench's): mlp = 784-512-512-10 (the main job's), wide = 784-2048-2048-10.
Protocol (ddp_bench's): 16 fixed random batches per rank (x ~ N(0, 1), labels uniform), a step is
zero_grad + forward + loss + backward (DDP's bucketed, averaged all-reduce) + SGD(lr 0.01,
momentum 0.9); `warmup` untimed then `steps` timed steps; a step's time is the maximum over the
ranks; median, p10, p90; samples/s = world x batch / median.
Output: comment lines (#), then "P <med_ms> <p10_ms> <p90_ms> <samples/s> <last loss>".
"""
import argparse
import os
import socket
import statistics
import time

WIDTHS = {"mlp": [784, 512, 512, 10], "wide": [784, 2048, 2048, 10]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_model(name):
    from torch import nn

    widths = WIDTHS[name]
    layers = []
    for i in range(len(widths) - 1):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(widths[i], widths[i + 1]))
    return nn.Sequential(*layers)


def rank_main(rank, args, port, results):
    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    world = args.world
    if world > 1:
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world)
    torch.manual_seed(0)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = make_model(args.model)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    inputs = [torch.randn(args.batch, 784, generator=generator) for _ in range(16)]
    labels = [torch.randint(0, 10, (args.batch,), generator=generator) for _ in range(16)]
    times = torch.zeros(args.steps, dtype=torch.float64)
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(inputs[step % 16]), labels[step % 16])
        loss.backward()
        optimizer.step()
        if step >= args.warmup:
            times[step - args.warmup] = time.perf_counter() - start
    if world > 1:
        dist.all_reduce(times, op=dist.ReduceOp.MAX)  # a step lasts as long as its slowest rank
        dist.destroy_process_group()
    if rank == 0:
        results.put((sorted(times.tolist()), loss.item()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(WIDTHS), default="mlp")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--cores", default="default")
    args = parser.parse_args()
    # Read by OpenMP and OpenBLAS when each spawned process starts.
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ.pop("OPENBLAS_CORETYPE", None)
    if args.cores != "default":
        os.environ["OPENBLAS_CORETYPE"] = args.cores
    import torch
    import torch.multiprocessing as mp

    widths = "-".join(str(w) for w in WIDTHS[args.model])
    print(f"# torch {torch.__version__}: DDP over gloo (CPU), MLP {widths}, {args.world} "
          f"processes, batch {args.batch} per rank, 1 torch + 1 OpenBLAS thread per process, "
          f"OPENBLAS_CORETYPE {args.cores}", flush=True)
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(rank_main, args=(args, free_port(), results), nprocs=args.world, join=True)
    times, loss = results.get()
    median = statistics.median(times)
    print(f"P {median * 1e3:.4f} {times[len(times) // 10] * 1e3:.4f} "
          f"{times[len(times) * 9 // 10] * 1e3:.4f} {args.world * args.batch / median:.1f} "
          f"{loss:.6f}", flush=True)


if __name__ == "__main__":
    main()
