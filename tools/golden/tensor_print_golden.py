#!/usr/bin/python3
"""How PyTorch prints tensors (str(t), default print options), for Tensor::to_string.

Writes tests/data/tensor_print.txt (read by tests/tensor/tensor_print_test.cpp), one case each:
  case NAME DTYPE SHAPE...   the tensor: ruccl's dtype name and its shape
  values V...                its values in row-major order (Python's repr of each)
  text                       then str(t) line by line, each line prefixed with "| "
ruccl names dtypes its own way (F64, I32, ...): the script rewrites "dtype=torch.float64" to
"dtype=F64", in cases short enough that the suffix stays where it was.
Run with Debian's PyTorch: /usr/bin/python3 tools/golden/tensor_print_golden.py
"""
import math
import os
import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "tensor_print.txt")
NAMES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
         torch.bfloat16: "BF16", torch.int32: "I32", torch.int64: "I64", torch.bool: "Bool"}


def cases():
    yield "matrix", torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    yield "fixed_f64", torch.tensor([0.5, 1.25, -3.0], dtype=torch.float64)
    yield "scientific_small", torch.tensor([1e-5, 1.0, 0.25])
    yield "scientific_integers", torch.tensor([1e9, 1.0, -3.0])
    yield "int64", torch.tensor([1, 2, 3])
    yield "int32", torch.tensor([[1, -20], [300, 4]], dtype=torch.int32)
    yield "bool", torch.tensor([True, False, True])
    yield "scalar", torch.tensor(3.5)
    yield "empty_matrix", torch.zeros(0, 3)
    yield "empty_int64", torch.zeros(0, dtype=torch.int64)
    yield "non_finite", torch.tensor([math.nan, math.inf, -math.inf, 1.0, 0.0])
    yield "non_finite_only", torch.tensor([math.nan, -math.inf])
    yield "f16", torch.tensor([0.5, 2.0, -1.5], dtype=torch.float16)
    yield "wrapped_row", torch.arange(30, dtype=torch.float32) * 0.1 - 1
    yield "three_dims", torch.arange(12, dtype=torch.float32).reshape(2, 2, 3) / 4
    yield "summarised_vector", torch.arange(2000, dtype=torch.float32)
    yield "summarised_matrix", torch.arange(1200, dtype=torch.float64).reshape(24, 50) / 8
    yield "summarised_3d", torch.arange(1024, dtype=torch.int64).reshape(4, 16, 16)


def main():
    lines = [f"# torch {torch.__version__}: str(t) with the default print options"]
    for name, t in cases():
        text = str(t)
        for torch_dtype, ours in NAMES.items():
            text = text.replace(f"dtype={torch_dtype}", f"dtype={ours}")
        shape = " ".join(str(d) for d in t.shape)
        lines.append(f"case {name} {NAMES[t.dtype]} {shape}".rstrip())
        values = t.reshape(-1).to(torch.float64).tolist() if t.dtype != torch.bool else \
            [float(v) for v in t.reshape(-1).tolist()]
        lines.append("values " + " ".join(repr(float(v)) for v in values))
        lines.append("text")
        lines.extend("| " + line for line in text.split("\n"))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
