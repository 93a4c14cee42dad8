#!/usr/bin/python3
"""The PyTorch peer of the main job over processes (`ruccl-run --nproc-per-node 2
train_fashion_mnist`): the same MLP, optimizer, global batch and data split on Debian's
dataset-fashion-mnist, trained by processes with DistributedDataParallel over gloo (CPU, TCP on
loopback).

Usage: /usr/bin/python3 bench/peers/ddp_fashion_mnist_torch.py [--world 2] [--epochs 1]
           [--batch 128] [--max-batches N] [--hidden 512,512] [--lr 1e-3] [--threads 1]
           [--data DIR]
(bench/run_ddp_fashion_mnist.sh runs it beside ours and prints the table.)

What each rank does, as train_fashion_mnist does: the same seeded permutation of the 60000
training images per epoch on every rank; global batch b of the permutation split into the rank's
balanced shard [b * r / W, b * (r + 1) / W); model 784 - hidden (ReLU) - 10, cross-entropy,
Adam(lr); DDP averages the gradients (bucketed all-reduce over gloo), which for equal shards is
the global-batch gradient our token-weighted DataParallel computes. torch threads per process:
--threads (default 1: two processes on the 2 cores of the development machine, as ruccl-run
gives each rank cores / ranks).
Timed: the training loop of each epoch (batch assembly, forward, backward with DDP's all-reduce,
Adam), not data loading and not evaluation; a rank's epoch time is the maximum over the ranks.
CPU time: each process's (all threads) over the same loop, summed over the ranks.
Output: one line per epoch "epoch E samples S seconds T samples_per_s X test_accuracy A
cpu_seconds C".
"""
import argparse
import gzip
import os
import socket
import time

import numpy as np


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_idx(path, header_bytes):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=header_bytes)


def load(data, split):
    import torch

    images = read_idx(os.path.join(data, f"{split}-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(data, f"{split}-labels-idx1-ubyte.gz"), 8)
    x = torch.from_numpy(images.reshape(-1, 784).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


def rank_main(rank, args, port):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.world)
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    torch.manual_seed(0)  # the same model everywhere (DDP broadcasts rank 0's anyway)
    layers, width = [], 784
    for hidden in (int(h) for h in args.hidden.split(",")):
        layers += [torch.nn.Linear(width, hidden), torch.nn.ReLU()]
        width = hidden
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(*layers, torch.nn.Linear(width, 10)))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    shuffle = torch.Generator().manual_seed(1)  # the same permutation on every rank
    count = len(train_x)
    batches = (count + args.batch - 1) // args.batch
    if args.max_batches > 0:
        batches = min(batches, args.max_batches)
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(count, generator=shuffle)
        dist.barrier()
        start = time.perf_counter()
        cpu_start = time.process_time()  # this process, all its threads (gloo's included)
        samples = 0
        for b in range(batches):
            begin = b * args.batch
            size = min(args.batch, count - begin)
            rows = order[begin + size * rank // args.world:begin + size * (rank + 1) // args.world]
            loss = torch.nn.functional.cross_entropy(model(train_x[rows]), train_y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            samples += size
        seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        cpu = torch.tensor([time.process_time() - cpu_start], dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        dist.all_reduce(cpu, op=dist.ReduceOp.SUM)
        with torch.no_grad():
            accuracy = (model(test_x).argmax(1) == test_y).float().mean().item()
        if rank == 0:
            s = seconds.item()
            print(f"epoch {epoch} samples {samples} seconds {s:.3f} samples_per_s "
                  f"{samples / s:.0f} test_accuracy {accuracy:.4f} cpu_seconds {cpu.item():.2f}",
                  flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=128, help="global batch")
    parser.add_argument("--max-batches", type=int, default=0)
    parser.add_argument("--hidden", default="512,512")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # read by each spawned process
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import torch
    import torch.multiprocessing as mp

    print(f"# torch {torch.__version__}: DDP over gloo (CPU), {args.world} processes, MLP 784-"
          f"{args.hidden.replace(',', '-')}-10, Adam lr {args.lr}, global batch {args.batch}, "
          f"{args.threads} thread(s) per process", flush=True)
    mp.spawn(rank_main, args=(args, free_port()), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
