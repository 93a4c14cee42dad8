#!/usr/bin/python3
"""The PyTorch peer of bench/model_step_bench: the same cases, the same shapes.

Usage: /usr/bin/python3 bench/peers/model_step_torch.py [--threads T] [--iters N] [--only NAME]
(Debian's python3-torch 1.13 CPU; model_step_bench runs it with OPENBLAS_CORETYPE=SkylakeX on an
AVX-512 CPU -- torch's GEMMs are OpenBLAS's, its convolutions oneDNN's -- and parses its lines.)

Cases (see bench/model_step_bench.cpp):
  attn T=128, T=512  train_char_lm's pre-LN block (LayerNorm, causal nn.MultiheadAttention +
                     residual, LayerNorm, GELU MLP + residual), batch 8, embed 128, 4 heads:
                     forward + backward of [8, T, 128] with a fixed random output gradient
  cnn step           train_fashion_mnist --model cnn's net, batch 128: forward, cross-entropy,
                     backward, Adam step
  lm step            train_char_lm's GPT (2 blocks, embed 64, 4 heads, context 64, tied head,
                     vocabulary 96), batch 16: forward, cross-entropy, backward, AdamW step
Each: two warm-up iterations, then N timed (default 5); the medians in ms of the wall-clock time
and of the process's CPU time. Output, one line each:
  case name=NAME threads=T med_ms=W cpu_ms=C
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_mnist_torch import make_cnn  # noqa: E402
from train_char_lm import Block, Gpt  # noqa: E402


def medians_ms(iters, fn):
    """(wall, process CPU) medians in ms."""
    walls, cpus = [], []
    for i in range(iters + 2):
        start, cpu_start = time.perf_counter(), time.process_time()
        fn()
        if i >= 2:
            walls.append(1000 * (time.perf_counter() - start))
            cpus.append(1000 * (time.process_time() - cpu_start))
    return statistics.median(walls), statistics.median(cpus)


def attention_case(t):
    block = Block(128, 4)
    x = torch.randn(8, t, 128)
    g = torch.randn(8, t, 128)
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)  # true = masked out, as the peer GPT

    def step():
        block.zero_grad()
        xv = x.clone().requires_grad_(True)
        block(xv, mask).backward(g)
    return f"attn T={t}", step


def cnn_case():
    model = make_cnn()
    x = torch.rand(128, 784)
    y = torch.randint(0, 10, (128,))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return "cnn step", step


def lm_case():
    vocab, context = 96, 64
    model = Gpt(vocab, context, 64, 4, 2)
    x = torch.randint(0, vocab, (16, context))
    y = torch.randint(0, vocab, (16 * context,))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x).reshape(-1, vocab), y).backward()
        opt.step()
    return "lm step", step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    makers = [lambda: attention_case(128), lambda: attention_case(512), cnn_case, lm_case]
    for make in makers:
        name, step = make()
        if args.only and not name.startswith(args.only):
            continue
        wall, cpu = medians_ms(args.iters, step)
        print(f"case name={name} threads={args.threads} med_ms={wall:.3f} cpu_ms={cpu:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
