#!/usr/bin/python3
"""tp_block_torch.py: the PyTorch peer of bench/tp_block_bench.

train_char_lm's pre-LN block split Megatron-style over TP processes (torch.multiprocessing.spawn,
torch.distributed gloo over TCP loopback, GLOO_SOCKET_IFNAME=lo, 1 intra-op thread per rank),
the same shapes as tp_block_bench: LayerNorm; causal attention on this rank's H/TP heads (q, k, v
projections column-parallel, the output projection row-parallel with a replicated bias); LayerNorm;
fc column-parallel + GELU; proj row-parallel; residuals. The region ops are Megatron's f and g:
copy (forward identity, backward all_reduce) and reduce (forward all_reduce, backward identity),
written as autograd Functions over torch.distributed.nn.functional.all_reduce's collective
(its own backward all-reduces the gradient again, which is the reduce op's W x trap, so the
functions call it under no_grad). Two all-reduces of B*T*E in forward, two in backward.
Protocol of tp_block_bench: 2 warm-up steps, then per step dist.barrier(), time forward + backward
of sum(block(x)), the step's time is the max over ranks; the median is reported.

Run:    /usr/bin/python3 bench/peers/tp_block_torch.py --tps 1,2,4 [--iters N] [--batch B]
          [--seq T] [--embed E] [--heads H]     (run by tp_block_bench with OPENBLAS_CORETYPE unset)
Output: "# ..." then "case tp=TP med_ms=M" per TP.
"""
import argparse
import math
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dnn
import torch.multiprocessing as mp
import torch.nn.functional as F


def all_reduce_sum(t):
    with torch.no_grad():
        return dnn.all_reduce(t.clone(), op=dist.ReduceOp.SUM)


class Copy(torch.autograd.Function):  # f: identity forward, all_reduce backward
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return all_reduce_sum(g)


class Reduce(torch.autograd.Function):  # g: all_reduce forward, identity backward
    @staticmethod
    def forward(ctx, x):
        return all_reduce_sum(x)

    @staticmethod
    def backward(ctx, g):
        return g


class TpBlock(torch.nn.Module):
    def __init__(self, e, heads, tp):
        super().__init__()
        self.heads = heads // tp
        self.head_dim = e // heads
        self.ln1 = torch.nn.LayerNorm(e)
        self.in_proj = torch.nn.Linear(e, 3 * e // tp)
        self.out_proj = torch.nn.Linear(e // tp, e, bias=False)
        self.out_bias = torch.nn.Parameter(torch.zeros(e))
        self.ln2 = torch.nn.LayerNorm(e)
        self.fc = torch.nn.Linear(e, 4 * e // tp)
        self.proj = torch.nn.Linear(4 * e // tp, e, bias=False)
        self.proj_bias = torch.nn.Parameter(torch.zeros(e))

    def forward(self, x):
        b, t, _ = x.shape
        h = Copy.apply(self.ln1(x))
        q, k, v = self.in_proj(h).chunk(3, dim=-1)
        split = lambda z: z.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        a = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        a = a.transpose(1, 2).reshape(b, t, self.heads * self.head_dim)
        y = x + Reduce.apply(self.out_proj(a)) + self.out_bias
        m = F.gelu(self.fc(Copy.apply(self.ln2(y))))
        return y + Reduce.apply(self.proj(m)) + self.proj_bias


def worker(rank, tp, port, args, q):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=tp)
    torch.manual_seed(1)
    block = TpBlock(args.embed, args.heads, tp)
    x = torch.randn(args.batch, args.seq, args.embed)

    def step():
        block.zero_grad(set_to_none=True)
        xi = x.clone().requires_grad_(True)
        block(xi).sum().backward()

    for _ in range(2):
        step()
    times = []
    for _ in range(args.iters):
        dist.barrier()
        t0 = time.perf_counter()
        step()
        mine = torch.tensor([(time.perf_counter() - t0) * 1e3], dtype=torch.float64)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        times.append(mine.item())
    if rank == 0:
        times.sort()
        q.put(times[len(times) // 2])
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tps", default="1,2,4")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    args = p.parse_args()
    print(f"# torch {torch.__version__} gloo, B {args.batch} T {args.seq} E {args.embed} "
          f"{args.heads} heads, {args.iters} iters", flush=True)
    ctx = mp.get_context("spawn")
    for tp in [int(t) for t in args.tps.split(",")]:
        q = ctx.SimpleQueue()
        mp.spawn(worker, args=(tp, free_port(), args, q), nprocs=tp, join=True)
        print(f"case tp={tp} med_ms={q.get():.3f}", flush=True)


if __name__ == "__main__":
    main()
