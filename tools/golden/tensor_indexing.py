#!/usr/bin/python3
"""tensor_indexing.py - golden values of torch's x[...] indexing (Debian's python3-torch 1.13) for
ruCCL's Tensor::index / Var::index tests (tests/tensor/indexing_test.cpp,
tests/autodiff/var_index_test.cpp).

Usage: /usr/bin/python3 tools/golden/tensor_indexing.py [OUT_DIR]   (default tests/data)

Writes tensor_indexing.txt in the format of tensor_linalg_index.txt, one tensor per line:
    CASE NAME DTYPE NDIM D0 .. D{NDIM-1} V0 V1 ...
Case "input" holds x (F64 [3, 4, 5]). Every other case is one index pattern (the comment line
before it gives it in Python; the C++ tests spell the same pattern with ruccl::indexing): `out` is
x[pattern], `w` a random weight of out's shape, and `grad` is d sum(w * x[pattern]) / d x.
"""
import os
import sys

import torch

NAMES = {torch.float64: "F64"}


def line(case, name, t):
    t = t.detach().contiguous()
    values = " ".join(f"{v:.17g}" for v in t.reshape(-1).tolist())
    dims = " ".join(str(d) for d in t.shape)
    return f"{case} {name} {NAMES[t.dtype]} {t.dim()} {dims} {values}".replace("  ", " ").strip()


MASK = torch.tensor([True, False, True, True, False])
# (case, python spelling, the index)
CASES = [
    ("slice_int", "x[0:2, 3]", (slice(0, 2), 3)),
    ("full_step", "x[:, 1:, ::2]", (slice(None), slice(1, None), slice(None, None, 2))),
    ("ellipsis_neg", "x[..., -1]", (Ellipsis, -1)),
    ("new_axis", "x[None, 1, :, None]", (None, 1, slice(None), None)),
    ("clamped", "x[-2:, 1:100:3, -100:2]", (slice(-2, None), slice(1, 100, 3), slice(-100, 2))),
    ("tensor", "x[1:, [2, 0, 2, -1]]", (slice(1, None), torch.tensor([2, 0, 2, -1]))),
    ("mask", "x[:, :, [T, F, T, T, F]]", (slice(None), slice(None), MASK)),
    ("empty", "x[2:2]", (slice(2, 2),)),
    ("int_ellipsis_step", "x[1, ..., 1::2]", (1, Ellipsis, slice(1, None, 2))),
    ("neg_ints", "x[-1, -4, -5]", (-1, -4, -5)),
]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "data")
    g = torch.Generator().manual_seed(20261201)
    x = torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
    lines = [f"# torch {torch.__version__}; tools/golden/tensor_indexing.py", line("input", "x", x)]
    for case, spelling, index in CASES:
        leaf = x.clone().requires_grad_(True)
        out = leaf[index]
        w = torch.randn(out.shape, generator=g, dtype=torch.float64)
        (w * out).sum().backward()
        lines += [f"# {case}: {spelling}", line(case, "out", out), line(case, "w", w),
                  line(case, "grad", leaf.grad)]
    with open(os.path.join(out_dir, "tensor_indexing.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
