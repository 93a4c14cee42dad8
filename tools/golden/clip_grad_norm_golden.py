#!/usr/bin/python3
"""Golden values of optim::clip_grad_norm_ from torch.nn.utils.clip_grad_norm_ (norm_type 2).

Writes tests/data/optim_clip_grad_norm.txt (read by tests/optim/clip_grad_norm_test.cpp):
  case NAME DTYPE MAX_NORM        one clipping: the gradients that follow, then its norm
  grad SHAPE... | IN... | OUT...  a gradient's shape, values before and after clipping
  norm VALUE                      what clip_grad_norm_ returned (the norm before clipping)
Run with Debian's PyTorch: /usr/bin/python3 tools/golden/clip_grad_norm_golden.py
"""
import os
import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data",
                   "optim_clip_grad_norm.txt")


def fmt(values):
    return " ".join(repr(float(v)) for v in values)


def case(lines, name, dtype, max_norm, grads):
    params = []
    for g in grads:
        p = torch.zeros(g.shape, dtype=dtype, requires_grad=True)
        p.grad = g.to(dtype).clone()
        params.append(p)
    before = [p.grad.clone() for p in params]
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    lines.append(f"case {name} {'F64' if dtype == torch.float64 else 'F32'} {max_norm!r}")
    for b, p in zip(before, params):
        shape = " ".join(str(d) for d in b.shape)
        lines.append(f"grad {shape} | {fmt(b.reshape(-1).tolist())} | "
                     f"{fmt(p.grad.reshape(-1).tolist())}")
    lines.append(f"norm {float(norm)!r}")


def main():
    gen = torch.Generator().manual_seed(2026)
    grads = [torch.randn(2, 3, generator=gen, dtype=torch.float64),
             torch.randn(4, generator=gen, dtype=torch.float64),
             torch.randn(1, 1, generator=gen, dtype=torch.float64)]
    lines = [f"# torch {torch.__version__}; torch.nn.utils.clip_grad_norm_(params, max_norm)"]
    for dtype in (torch.float64, torch.float32):
        case(lines, "clipped", dtype, 1.0, grads)
        case(lines, "below_max_norm", dtype, 100.0, grads)
        case(lines, "scaled_up_values", dtype, 0.5, [g * 1000 for g in grads])
        case(lines, "zero_gradients", dtype, 1.0, [torch.zeros(3, dtype=torch.float64)])
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
