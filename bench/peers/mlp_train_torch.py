#!/usr/bin/python3
"""The PyTorch peer of bench/autodiff_bench: the same MLP step and tiny-op chain in PyTorch.

Usage: /usr/bin/python3 bench/peers/mlp_train_torch.py [--cores default SkylakeX]
(Debian's python3-torch; autodiff_bench runs it with --cores SkylakeX and parses its lines.)

MLP step: 784-512-512-10, ReLU, cross-entropy, batch 128, SGD(lr 0.01, momentum 0.9), float32,
16 fixed random batches (x ~ N(0, 1), labels uniform) cycled; a step is zero_grad + forward +
loss + backward + step, timed alone; 20 warm-up steps, then 200 timed; median, p10, p90 in ms.
Tiny ops: a 16-element leaf, 1000 ops alternating y * 1.0001 and y + 0.001, sum, backward;
microseconds per op for the forward with graph, the backward and a no-grad forward; median of
30 repetitions after 5 warm-ups.

Each configuration runs in a fresh process, since thread settings are read at start-up. Debian's
torch does float32 matmuls in OpenBLAS, whose threads follow OPENBLAS_NUM_THREADS (not
torch.set_num_threads), so a configuration is (torch threads, OpenBLAS threads, OMP_WAIT_POLICY):
1/1; 2/2; 2/2 passive; 1/2. The 2-core figure compared is the best 2-core configuration.
OpenBLAS 0.3.21 picks its SSE3 'Prescott' kernels on CPUs it does not know; OPENBLAS_CORETYPE=
SkylakeX selects the AVX-512 ones (the fair comparison on an AVX-512 machine).
Output, one line per configuration and test:
  mlp  torch_thr=T blas_thr=B wait=W core=C med_ms=... p10=... p90=... loss0=... loss_last=...
  tiny torch_thr=T blas_thr=B wait=W core=C fwd_graph_us/op=... bwd_us/op=... fwd+bwd_us/op=...
       nograd_fwd_us/op=...
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

CONFIGS = [(1, 1, None), (2, 2, None), (2, 2, "PASSIVE"), (1, 2, None)]


def percentile(sorted_values, fraction):
    return sorted_values[int(len(sorted_values) * fraction)]


def measure(threads, warmup=20, steps=200, batch=128):
    import torch
    from torch import nn

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs = [torch.randn(batch, 784) for _ in range(16)]
    labels = [torch.randint(0, 10, (batch,)) for _ in range(16)]
    times, losses = [], []
    for step in range(warmup + steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(inputs[step % 16]), labels[step % 16])
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - start
        losses.append(loss.item())
        if step >= warmup:
            times.append(elapsed)
    times.sort()
    config = (f"torch_thr={threads} blas_thr={os.environ.get('OPENBLAS_NUM_THREADS')} "
              f"wait={os.environ.get('OMP_WAIT_POLICY', '-')} "
              f"core={os.environ.get('OPENBLAS_CORETYPE', 'default')}")
    print(f"mlp  {config} med_ms={statistics.median(times) * 1e3:.3f} "
          f"p10={percentile(times, 0.1) * 1e3:.3f} p90={percentile(times, 0.9) * 1e3:.3f} "
          f"loss0={losses[0]:.4f} loss_last={losses[-1]:.4f}", flush=True)

    ops = 1000
    forward, backward, no_grad = [], [], []
    for repetition in range(35):
        x = torch.randn(16, requires_grad=True)
        t0 = time.perf_counter()
        y = x
        for k in range(ops):
            y = y * 1.0001 if k % 2 == 0 else y + 0.001
        total = y.sum()
        t1 = time.perf_counter()
        total.backward()
        t2 = time.perf_counter()
        with torch.no_grad():
            y = x
            for k in range(ops):
                y = y * 1.0001 if k % 2 == 0 else y + 0.001
        t3 = time.perf_counter()
        if repetition >= 5:
            forward.append(t1 - t0)
            backward.append(t2 - t1)
            no_grad.append(t3 - t2)
    f, b, n = (statistics.median(v) / ops * 1e6 for v in (forward, backward, no_grad))
    print(f"tiny {config} fwd_graph_us/op={f:.2f} bwd_us/op={b:.2f} fwd+bwd_us/op={f + b:.2f} "
          f"nograd_fwd_us/op={n:.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cores", nargs="+", default=["default", "SkylakeX"])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: torch threads
    args = parser.parse_args()
    if args.one is not None:
        return measure(args.one)
    import torch
    print(f"# torch {torch.__version__}: MLP 784-512-512-10 step, batch 128, SGD m=0.9; "
          f"tiny-op chain", flush=True)
    for core in args.cores:
        for torch_threads, blas_threads, wait in CONFIGS:
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OPENBLAS_CORETYPE", "OMP_WAIT_POLICY")}
            env.update(OMP_NUM_THREADS=str(torch_threads), OPENBLAS_NUM_THREADS=str(blas_threads))
            if core != "default":
                env["OPENBLAS_CORETYPE"] = core
            if wait:
                env["OMP_WAIT_POLICY"] = wait
            subprocess.run([sys.executable, __file__, "--one", str(torch_threads)], env=env,
                           check=True)


if __name__ == "__main__":
    main()
