#!/usr/bin/python3
"""optim_golden.py - golden trajectories of torch.optim (Debian's python3-torch 1.13) for ruCCL.

Usage: /usr/bin/python3 tools/golden/optim_golden.py [OUT_DIR]   (default tests/data)

Writes two text files:
  optim_trajectories.txt  the fixed model (inputs, targets, initial parameters) and, for each
                          optimizer configuration, the parameters after each of 20 steps.
  optim_schedulers.txt    learning rates of torch's schedulers for the first steps.

Model (float64, so the comparison tolerance can be tight): x [5, 4] -> Linear(4, 3) -> tanh ->
Linear(3, 2) -> MSE (mean) against y [5, 2]. Parameters in ParamId order: fc1.weight [3, 4],
fc1.bias [3], fc2.weight [2, 3], fc2.bias [2]. Step s uses the same batch; gradients come from
loss.backward(). Line format: `key value value ...` with 17 significant digits.
"""
import math
import os
import sys

import torch

STEPS = 20


def fmt(values):
    return " ".join(f"{v:.17g}" for v in values)


def flat(t):
    return t.detach().reshape(-1).tolist()


def make_model():
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(5, 4, generator=g, dtype=torch.float64)
    y = torch.randn(5, 2, generator=g, dtype=torch.float64)
    w1 = torch.randn(3, 4, generator=g, dtype=torch.float64) * 0.5
    b1 = torch.randn(3, generator=g, dtype=torch.float64) * 0.1
    w2 = torch.randn(2, 3, generator=g, dtype=torch.float64) * 0.5
    b2 = torch.randn(2, generator=g, dtype=torch.float64) * 0.1
    return x, y, [w1, b1, w2, b2]


CONFIGS = [
    # name, lr, constructor
    ("sgd_plain", 0.1, lambda p, lr: torch.optim.SGD(p, lr=lr)),
    ("sgd_momentum", 0.05, lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9)),
    ("sgd_dampening_wd", 0.05,
     lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    ("sgd_nesterov_wd", 0.05,
     lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, nesterov=True, weight_decay=0.05)),
    ("adam", 0.01, lambda p, lr: torch.optim.Adam(p, lr=lr)),
    ("adam_wd", 0.01,
     lambda p, lr: torch.optim.Adam(p, lr=lr, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamw", 0.01, lambda p, lr: torch.optim.AdamW(p, lr=lr)),  # torch's default wd 1e-2
    ("adamw_wd", 0.02,
     lambda p, lr: torch.optim.AdamW(p, lr=lr, betas=(0.85, 0.995), eps=1e-7, weight_decay=0.2)),
]


def trajectories(out):
    x, y, init = make_model()
    out.write("# torch %s; model x[5,4] -> Linear(4,3) -> tanh -> Linear(3,2) -> mse_loss(mean), F64\n"
              % torch.__version__)
    out.write("steps %d\n" % STEPS)
    out.write("x " + fmt(flat(x)) + "\n")
    out.write("y " + fmt(flat(y)) + "\n")
    for i, p in enumerate(init):
        out.write("init%d " % (i + 1) + fmt(flat(p)) + "\n")
    for name, lr, make in CONFIGS:
        params = [p.clone().requires_grad_(True) for p in init]
        opt = make(params, lr)
        out.write("config %s lr %.17g\n" % (name, lr))
        for step in range(STEPS):
            opt.zero_grad()
            h = torch.tanh(x @ params[0].t() + params[1])
            loss = torch.nn.functional.mse_loss(h @ params[2].t() + params[3], y)
            loss.backward()
            opt.step()
            out.write("step %d loss %.17g\n" % (step + 1, loss.item()))
            for i, p in enumerate(params):
                out.write("param%d " % (i + 1) + fmt(flat(p)) + "\n")


def scheduler_lrs(make, steps):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.1)
    sched = make(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def schedulers(out):
    lr_sched = torch.optim.lr_scheduler
    out.write("# torch %s; base lr 0.1; value k is the lr used by step k (0-based)\n"
              % torch.__version__)
    out.write("step_lr_3_0.5 " + fmt(scheduler_lrs(lambda o: lr_sched.StepLR(o, 3, 0.5), 12)) + "\n")
    out.write("cosine_10_0.01 " + fmt(scheduler_lrs(
        lambda o: lr_sched.CosineAnnealingLR(o, T_max=10, eta_min=0.01), 11)) + "\n")
    out.write("linear_0.25_4 " + fmt(scheduler_lrs(
        lambda o: lr_sched.LinearLR(o, start_factor=0.25, total_iters=4), 8)) + "\n")
    # Warm-up then cosine, closed form (torch's SequentialLR re-bases the second schedule in a
    # way that differs between versions; this is the formula ruCCL documents).
    w, total, eta = 4, 14, 0.01
    vals = []
    for s in range(total + 2):
        if s < w:
            vals.append(0.1 * (0.25 + 0.75 * s / w))
        else:
            t = min(s - w, total - w)
            vals.append(eta + (0.1 - eta) * (1 + math.cos(math.pi * t / (total - w))) / 2)
    out.write("warmup_cosine_0.25_4_14_0.01 " + fmt(vals) + "\n")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data"
    with open(os.path.join(out_dir, "optim_trajectories.txt"), "w") as out:
        trajectories(out)
    with open(os.path.join(out_dir, "optim_schedulers.txt"), "w") as out:
        schedulers(out)


if __name__ == "__main__":
    main()
