#!/usr/bin/python3
"""tensor_linalg_index.py - golden values of torch.matmul and the index ops (Debian's
python3-torch 1.13) for ruCCL's tensor tests (tests/tensor/linalg_test.cpp, index_test.cpp).

Usage: /usr/bin/python3 tools/golden/tensor_linalg_index.py [OUT_DIR]   (default tests/data)

Writes tensor_linalg_index.txt, one tensor per line:
    CASE NAME DTYPE NDIM D0 .. D{NDIM-1} V0 V1 ...
CASE groups the tensors of one op call (inputs by argument name, the result as `out`); the C++
test knows which op each CASE calls. DTYPE is F32, F64 or I64; values are row-major, F32 with 9
and F64 with 17 significant digits (both round-trip exactly). F32 matmul results are computed
in float64 from the float32 inputs and rounded once, so a test compares against the exact
product with a tolerance that covers only our own rounding.
"""
import os
import sys

import torch

NAMES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def line(case, name, t):
    t = t.detach().contiguous()
    if t.dtype == torch.float32:
        values = " ".join(f"{v:.9g}" for v in t.reshape(-1).tolist())
    elif t.dtype == torch.float64:
        values = " ".join(f"{v:.17g}" for v in t.reshape(-1).tolist())
    else:
        values = " ".join(str(v) for v in t.reshape(-1).tolist())
    dims = " ".join(str(d) for d in t.shape)
    return f"{case} {name} {NAMES[t.dtype]} {t.dim()} {dims} {values}".replace("  ", " ").strip()


def matmul_cases(g, out):
    # (case, a shape, b shape, dtype)
    shapes = [
        ("matmul_dot", [7], [7], torch.float32),
        ("matmul_mm", [3, 4], [4, 5], torch.float32),
        ("matmul_mm_f64", [6, 5], [5, 7], torch.float64),
        ("matmul_mv", [3, 4], [4], torch.float32),
        ("matmul_vm", [4], [4, 5], torch.float32),
        ("matmul_bmm", [2, 3, 4], [2, 4, 5], torch.float32),
        ("matmul_broadcast_batch", [2, 1, 3, 4], [5, 4, 2], torch.float32),
        ("matmul_batched_by_matrix", [4, 3, 5], [5, 6], torch.float32),
        ("matmul_matrix_by_batched", [3, 5], [2, 5, 4], torch.float32),
        ("matmul_vector_by_batched", [4], [2, 4, 3], torch.float32),
        ("matmul_batched_by_vector", [2, 3, 4], [4], torch.float32),
        ("matmul_large", [50, 40], [40, 37], torch.float32),
        ("matmul_large_f64", [21, 30], [30, 26], torch.float64),
    ]
    for case, sa, sb, dtype in shapes:
        a = torch.randn(sa, generator=g, dtype=dtype)
        b = torch.randn(sb, generator=g, dtype=dtype)
        result = torch.matmul(a.double(), b.double()).to(dtype)
        out += [line(case, "a", a), line(case, "b", b), line(case, "out", result)]


def index_cases(g, out):
    x = torch.randn(5, 3, generator=g)
    index = torch.tensor([4, 0, 4, 2])
    out += [line("index_select_dim0", "x", x), line("index_select_dim0", "index", index),
            line("index_select_dim0", "out", torch.index_select(x, 0, index))]

    x = torch.randn(2, 3, 4, generator=g)
    index = torch.tensor([3, 0, 3])
    out += [line("index_select_dim2", "x", x), line("index_select_dim2", "index", index),
            line("index_select_dim2", "out", torch.index_select(x, 2, index))]

    x = torch.randn(3, 4, generator=g)
    index = torch.tensor([[3, 0], [1, 1], [2, 3]])
    out += [line("gather_dim1", "x", x), line("gather_dim1", "index", index),
            line("gather_dim1", "out", torch.gather(x, 1, index))]

    x = torch.randn(4, 3, generator=g)
    index = torch.tensor([[3, 0, 1], [0, 2, 2]])
    out += [line("gather_dim0", "x", x), line("gather_dim0", "index", index),
            line("gather_dim0", "out", torch.gather(x, 0, index))]

    x = torch.randn(3, 5, generator=g, dtype=torch.float64)
    index = torch.tensor([[0, 1, 2, 0], [4, 4, 4, 0], [1, 3, 1, 3]])
    src = torch.randn(3, 4, generator=g, dtype=torch.float64)
    out += [line("scatter_add_dim1", "x", x), line("scatter_add_dim1", "index", index),
            line("scatter_add_dim1", "src", src),
            line("scatter_add_dim1", "out", torch.scatter_add(x, 1, index, src))]

    x = torch.randn(4, 2, generator=g, dtype=torch.float64)
    index = torch.tensor([[3, 0], [3, 3], [1, 0]])
    src = torch.randn(3, 2, generator=g, dtype=torch.float64)
    out += [line("scatter_add_dim0", "x", x), line("scatter_add_dim0", "index", index),
            line("scatter_add_dim0", "src", src),
            line("scatter_add_dim0", "out", torch.scatter_add(x, 0, index, src))]

    x = torch.randn(5, 3, generator=g, dtype=torch.float64)
    index = torch.tensor([0, 4, 2, 0])
    src = torch.randn(4, 3, generator=g, dtype=torch.float64)
    out += [line("index_add_dim0", "x", x), line("index_add_dim0", "index", index),
            line("index_add_dim0", "src", src),
            line("index_add_dim0", "out", torch.index_add(x, 0, index, src))]

    x = torch.randn(2, 4, generator=g, dtype=torch.float64)
    index = torch.tensor([1, 1, 3])
    src = torch.randn(2, 3, generator=g, dtype=torch.float64)
    out += [line("index_add_dim1", "x", x), line("index_add_dim1", "index", index),
            line("index_add_dim1", "src", src),
            line("index_add_dim1", "out", torch.index_add(x, 1, index, src))]

    indices = torch.tensor([[0, 4, 2], [1, 1, 3]])
    out += [line("one_hot", "indices", indices),
            line("one_hot", "out", torch.nn.functional.one_hot(indices, 5))]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data")
    g = torch.Generator().manual_seed(20261129)
    lines = [f"# torch {torch.__version__}; tools/golden/tensor_linalg_index.py"]
    matmul_cases(g, lines)
    index_cases(g, lines)
    path = os.path.join(out_dir, "tensor_linalg_index.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path} ({len(lines)} lines)")


if __name__ == "__main__":
    main()
