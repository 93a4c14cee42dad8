#!/usr/bin/python3
"""The PyTorch peer of bench/conv_bench: conv2d forward + backward on the same shapes.

Usage: /usr/bin/python3 bench/peers/conv_torch.py [--threads T] [--iters N] [--cpu-time]
(Debian's python3-torch 1.13, whose CPU convolutions run in oneDNN; conv_bench runs it with
OPENBLAS_CORETYPE unset and parses its lines.)

Each shape: x [N, C, H, W] and weight [O, C, 3, 3] (float32, requires_grad) and bias [O];
y = conv2d(x, w, b, padding=1), y.backward(g) with a fixed random g; one warm-up iteration,
then N timed (default 5); the median in ms (wall time, or process CPU time with --cpu-time). Output, one line per shape:
  conv name=NAME threads=T med_ms=...
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

# name, (N, C, H, W), out channels: the same table as bench/conv_bench.cpp.
SHAPES = [
    ("cnn1", (64, 1, 28, 28), 32),
    ("cnn2", (64, 32, 14, 14), 64),
    ("resnet", (16, 64, 56, 56), 64),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--cpu-time", action="store_true",
                        help="process CPU time instead of wall time (a loaded machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    clock = time.process_time if args.cpu_time else time.perf_counter
    for name, (n, c, h, w), o in SHAPES:
        x = torch.randn(n, c, h, w, requires_grad=True)
        wt = (torch.randn(o, c, 3, 3) * 0.1).requires_grad_(True)
        b = torch.randn(o, requires_grad=True)
        g = torch.randn(n, o, h, w)
        times = []
        for i in range(args.iters + 1):
            x.grad = wt.grad = b.grad = None
            start = clock()
            y = F.conv2d(x, wt, b, padding=1)
            y.backward(g)
            elapsed = (clock() - start) * 1e3
            if i > 0:
                times.append(elapsed)
        print(f"conv name={name} threads={args.threads} med_ms={statistics.median(times):.3f}",
              flush=True)


if __name__ == "__main__":
    main()
