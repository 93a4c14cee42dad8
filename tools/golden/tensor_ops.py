#!/usr/bin/python3
"""Golden data for the tensor ops: random inputs (fixed seed) and PyTorch's outputs.

Run with Debian's python3-torch (1.13):  /usr/bin/python3 tools/golden/tensor_ops.py
Writes tests/data/tensor_ops_golden.txt, read by tests/tensor/golden_ops_test.cpp.

Format (text, one record per line, '#' starts a comment line):
  case <op> [key=value ...]        an op and its parameters (dims as comma lists, 'all' for none)
  in <dtype> <ndim> <dims...> : <values...>     inputs, in argument order
  out <dtype> <ndim> <dims...> : <values...>    PyTorch's result
  end
Values are row-major; floats print with enough digits to round-trip their dtype (F16/BF16 values
print with 6 digits, enough to identify the value), integers exactly, Bool as 0/1.
"""
import os
import sys

import torch

SEED = 20240611
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                   "tensor_ops_golden.txt")

DTYPES = {
    "F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64,
    "I32": torch.int32, "I64": torch.int64, "Bool": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}
FLOATS = ["F16", "BF16", "F32", "F64"]
INTS = ["I32", "I64"]

gen = torch.Generator().manual_seed(SEED)
lines = []


def fmt_value(v, dtype):
    if dtype in (torch.float64,):
        return repr(float(v))
    if dtype == torch.float32:
        return "%.9g" % float(v)
    if dtype.is_floating_point:  # F16/BF16: 6 digits identify the value
        return "%.6g" % float(v)
    if dtype == torch.bool:
        return "1" if bool(v) else "0"
    return str(int(v))


def tensor_line(kind, t):
    t = t.contiguous()
    dims = list(t.shape)
    values = t.flatten().tolist() if t.dtype not in (torch.float16, torch.bfloat16) \
        else t.float().flatten().tolist()
    head = "%s %s %d %s" % (kind, NAMES[t.dtype], len(dims), " ".join(str(d) for d in dims))
    return head.rstrip() + " : " + " ".join(fmt_value(v, t.dtype) for v in values)


def rand(shape, dtype, kind="normal"):
    dt = DTYPES[dtype]
    if dtype == "Bool":
        return torch.rand(shape, generator=gen) < 0.5
    if dtype in INTS:
        return torch.randint(-50, 50, shape, generator=gen, dtype=dt)
    if kind == "positive":
        x = torch.rand(shape, generator=gen, dtype=torch.float64) * 4 + 0.25
    elif kind == "away_from_zero":  # |x| in [0.5, 2.5], for divisors
        x = torch.rand(shape, generator=gen, dtype=torch.float64) * 2 + 0.5
        x = x * torch.where(torch.rand(shape, generator=gen) < 0.5, -1.0, 1.0).double()
    elif kind == "exponent":
        x = torch.rand(shape, generator=gen, dtype=torch.float64) * 4 - 2
    elif kind == "ties":  # few distinct values, to exercise argmax/argmin tie-breaking
        x = torch.randint(-3, 3, shape, generator=gen).double()
    else:
        x = torch.randn(shape, generator=gen, dtype=torch.float64) * 2
    return x.to(dt)


def call(fn, *args, **kwargs):
    """fn(*args), or, where PyTorch's CPU kernels lack F16/BF16, fn on F32 copies rounded back
    (the same "compute in F32, round once" rule ruCCL follows)."""
    try:
        return fn(*args, **kwargs)
    except RuntimeError:
        low = [a.dtype for a in args if a.dtype in (torch.float16, torch.bfloat16)]
        if not low:
            raise
        up = [a.float() if a.dtype in (torch.float16, torch.bfloat16) else a for a in args]
        out = fn(*up, **kwargs)
        return out.to(low[0]) if out.dtype.is_floating_point else out


def record(op, inputs, output, **params):
    p = " ".join("%s=%s" % (k, v) for k, v in params.items())
    lines.append(("case %s %s" % (op, p)).rstrip())
    for t in inputs:
        lines.append(tensor_line("in", t))
    lines.append(tensor_line("out", output))
    lines.append("end")


def dims_str(dims):
    if dims is None:
        return "all"
    if isinstance(dims, int):
        return str(dims)
    return ",".join(str(d) for d in dims)


BINARY_SHAPES = [([2, 3], [2, 3]), ([2, 2, 3], [3]), ([3, 1], [1, 4]), ([], [2, 3]),
                 ([2, 1, 3], [2, 1]), ([0, 3], [1, 3])]


def binary_cases():
    arith = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum,
             "minimum": torch.minimum}
    compare = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
               "ge": torch.ge}
    for dtype in FLOATS + INTS:
        for sa, sb in BINARY_SHAPES:
            for name, fn in arith.items():
                a, b = rand(sa, dtype), rand(sb, dtype)
                record(name, [a, b], call(fn, a, b))
            if (sa, sb) not in BINARY_SHAPES[1:4]:
                continue
            for name, fn in compare.items():
                a, b = rand(sa, dtype, "ties"), rand(sb, dtype, "ties")
                record(name, [a, b], call(fn, a, b))
    for dtype in FLOATS:
        for sa, sb in BINARY_SHAPES[:4]:
            a, b = rand(sa, dtype), rand(sb, dtype, "away_from_zero")
            record("div", [a, b], call(torch.div, a, b))
            a, b = rand(sa, dtype, "positive"), rand(sb, dtype, "exponent")
            record("pow", [a, b], call(torch.pow, a, b))
    # Mixed dtypes promote (PyTorch's result types).
    for da, db in [("I32", "F32"), ("I32", "I64"), ("F16", "BF16"), ("F16", "F32"),
                   ("Bool", "I32"), ("I64", "F64")]:
        a, b = rand([2, 3], da), rand([3], db)
        record("add", [a, b], torch.add(a, b))
        record("mul", [a, b], torch.mul(a, b))
        record("lt", [a, b], torch.lt(a, b))
    for sa, sb in BINARY_SHAPES[:4]:
        a, b = rand(sa, "Bool"), rand(sb, "Bool")
        record("logical_and", [a, b], torch.logical_and(a, b))
        record("logical_or", [a, b], torch.logical_or(a, b))
        record("eq", [a, b], torch.eq(a, b))
    for dtype in ["F32", "I64", "F16"]:
        c, a, b = rand([3, 1], "Bool"), rand([1, 4], dtype), rand([], dtype)
        record("where", [c, a, b], torch.where(c, a, b))
        c, a, b = rand([2, 3], "Bool"), rand([2, 3], dtype), rand([2, 3], dtype)
        record("where", [c, a, b], torch.where(c, a, b))


def unary_cases():
    fns = {"neg": torch.neg, "abs": torch.abs, "sign": torch.sign, "relu": torch.relu,
           "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh,
           "sigmoid": torch.sigmoid, "gelu": torch.nn.functional.gelu}
    numeric = ["neg", "abs", "sign", "relu"]
    for dtype in FLOATS + INTS:
        for shape in [[7], [2, 3, 4], []]:
            for name, fn in fns.items():
                if dtype in INTS and name not in numeric:
                    continue
                kind = "positive" if name in ("log", "sqrt") else "normal"
                x = rand(shape, dtype, kind)
                record(name, [x], call(fn, x))
    x = rand([2, 5], "Bool")
    record("logical_not", [x], torch.logical_not(x))


def reduce_cases():
    shapes = [[5], [3, 4], [2, 3, 4], [3, 1, 4]]
    for dtype in FLOATS + INTS + ["Bool"]:
        for shape in shapes:
            for dims in [None, 0, -1, [0, -1]] if len(shape) > 1 else [None, 0]:
                for keepdim in [False, True] if dtype in ("F32", "I32") else [dims == -1]:
                    x = rand(shape, dtype)
                    d = list(range(len(shape))) if dims is None else dims
                    record("sum", [x], call(torch.sum, x, dim=d, keepdim=keepdim),
                           dims=dims_str(dims), keepdim=int(keepdim))
                    if dtype in FLOATS:
                        record("mean", [x], call(torch.mean, x, dim=d, keepdim=keepdim),
                               dims=dims_str(dims), keepdim=int(keepdim))
                        if dims is not None and len(shape) > 1:
                            record("var", [x], call(torch.var, x, dim=d, unbiased=True,
                                                    keepdim=keepdim),
                                   dims=dims_str(dims), correction=1, keepdim=int(keepdim))
                            record("var", [x], call(torch.var, x, dim=d, unbiased=False,
                                                    keepdim=keepdim),
                                   dims=dims_str(dims), correction=0, keepdim=int(keepdim))
            for dim in [0, -1]:
                x = rand(shape, dtype, "ties")
                if dtype != "Bool":
                    record("prod", [x], call(torch.prod, x, dim=dim), dims=dim, keepdim=0)
                    record("argmax", [x], call(torch.argmax, x, dim=dim), dims=dim, keepdim=0)
                    record("argmin", [x], call(torch.argmin, x, dim=dim, keepdim=True), dims=dim,
                           keepdim=1)
                record("max", [x], call(torch.amax, x, dim=dim), dims=dim, keepdim=0)
                record("min", [x], call(torch.amin, x, dim=dim, keepdim=True), dims=dim, keepdim=1)
            x = rand(shape, dtype)
            record("max", [x], torch.max(x), dims="all", keepdim=0)
            record("min", [x], torch.min(x), dims="all", keepdim=0)
            if dtype in FLOATS:
                for dim in [0, -1]:
                    x = rand(shape, dtype)
                    record("softmax", [x], call(torch.softmax, x, dim=dim), dims=dim)
                    record("log_softmax", [x], call(torch.log_softmax, x, dim=dim), dims=dim)
    # A longer outer-dim sum (streams rows) and an outer-dim softmax (column blocks).
    x = rand([64, 24], "F32")
    record("sum", [x], torch.sum(x, dim=[0]), dims="0", keepdim=0)
    record("softmax", [x[:40, :7]], torch.softmax(x[:40, :7], dim=0), dims=0)


def main():
    torch.set_printoptions(precision=17)
    lines.append("# Generated by tools/golden/tensor_ops.py with torch %s, seed %d. Do not edit."
                 % (torch.__version__, SEED))
    binary_cases()
    unary_cases()
    reduce_cases()
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (sum(1 for l in lines if l.startswith("case")),
                                     os.path.normpath(OUT)), file=sys.stderr)


if __name__ == "__main__":
    main()
