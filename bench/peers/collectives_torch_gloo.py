#!/usr/bin/python3
"""collectives_torch_gloo.py: the PyTorch peer of bench/tcp_collective_bench.

torch.distributed with the gloo backend (Debian's python3-torch 1.13, gloo over TCP loopback,
GLOO_SOCKET_IFNAME=lo), WORLD processes from torch.multiprocessing.spawn, rendezvous
init_method tcp://127.0.0.1:<free port>, 1 intra-op thread per rank.
  all_reduce      dist.all_reduce (in place, SUM)
  all_gather      dist.all_gather into WORLD views of one preallocated output
                  (1.13's gloo has no all_gather_into_tensor / _allgather_base)
  reduce_scatter  dist.reduce_scatter: 1.13's gloo backend does not implement it; reported as
                  "U reduce_scatter <torch's message>" rather than emulated
  broadcast       dist.broadcast (root 0)
Protocol of tcp_collective_bench: per iteration refill the input (untimed), dist.barrier(), time
one collective on every rank; an iteration's time is the max over ranks (a MAX all_reduce of the
times); the median over iterations is reported (and the minimum). Sizes follow nccl-tests.

Run:    /usr/bin/python3 bench/peers/collectives_torch_gloo.py WORLD OPS SIZES [ITER_DIV]
Output: "# ..." then "R <op> <bytes> <iters> <median_us> <min_us>" per op and size, or
        "U <op> <reason>" for an op this torch cannot run.
"""
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def iters_for(nbytes, div):
    n = (400 if nbytes <= 16 << 10 else 200 if nbytes <= 256 << 10 else 50 if nbytes <= 4 << 20
         else 15 if nbytes <= 16 << 20 else 8)
    return max(3, n // max(div, 1))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, ops, sizes, div, q):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    lines = []
    for op in ops:
        for nbytes in sizes:
            count = nbytes // 4
            a = torch.empty(count, dtype=torch.float32)
            out = torch.empty(count, dtype=torch.float32)
            views = list(out.chunk(world))
            block = count // world

            def run():
                if op == "all_reduce":
                    dist.all_reduce(a, op=dist.ReduceOp.SUM)
                elif op == "all_gather":
                    dist.all_gather(views, a[:block])
                elif op == "reduce_scatter":
                    dist.reduce_scatter(out[:block], list(a.chunk(world)), op=dist.ReduceOp.SUM)
                else:
                    dist.broadcast(a, 0)

            if op == "reduce_scatter":
                try:
                    a.fill_(rank + 1.0)
                    run()
                except RuntimeError as e:  # the same on every rank: no collective was started
                    lines.append(f"U {op} {str(e).splitlines()[0]}")
                    break
            iters = iters_for(nbytes, div)
            warm = max(2, iters // 8)
            times = torch.zeros(iters, dtype=torch.float64)
            for i in range(-warm, iters):
                a.fill_(rank + 1.0)
                dist.barrier()
                t0 = time.perf_counter_ns()
                run()
                if i >= 0:
                    times[i] = (time.perf_counter_ns() - t0) / 1e9
            got = out[0].item() if op in ("all_gather", "reduce_scatter") else a[0].item()
            want = world * (world + 1) / 2 if op in ("all_reduce", "reduce_scatter") else 1.0
            if got != want:
                raise RuntimeError(f"{op} {nbytes}: rank {rank} got {got}, expected {want}")
            dist.all_reduce(times, op=dist.ReduceOp.MAX)
            ts = sorted(times.tolist())
            lines.append(f"R {op} {nbytes} {iters} {ts[iters // 2] * 1e6:.2f} {ts[0] * 1e6:.2f}")
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        q.put(lines)


def main():
    if len(sys.argv) < 4:
        print("usage: collectives_torch_gloo.py WORLD OPS SIZES [ITER_DIV]", file=sys.stderr)
        sys.exit(2)
    world = int(sys.argv[1])
    ops = sys.argv[2].split(",")
    sizes = [int(s) for s in sys.argv[3].split(",")]
    div = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    print(f"# torch {torch.__version__} gloo over TCP loopback, SUM float32, world={world}",
          flush=True)
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    mp.spawn(worker, args=(world, free_port(), ops, sizes, div, q), nprocs=world, join=True)
    for line in q.get():
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
