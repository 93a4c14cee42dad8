#!/usr/bin/python3
"""Golden values for tests/autodiff/attention_golden_test.cpp and loss_golden_test.cpp:
scaled_dot_product_attention, nn.MultiheadAttention and the losses, from PyTorch.

Run:  /usr/bin/python3 tools/golden/attention_loss_golden.py > tests/data/attention_loss_golden.txt
(Debian's python3-torch 1.13; CI only reads the committed output.)

Format: as tools/golden/autodiff_golden.py (`<case>.<name> <dtype> <ndim> <sizes...> <values...>`),
dtype f64, f32 or i64 (Bool masks are written as i64 0/1). Every case runs twice, in float64
(suffix _f64) and float32 (suffix _f32), on inputs drawn in float64 from torch.manual_seed(<seed>)
and rounded to the case's dtype, so both runs see the same numbers. Gradients are those of
sum(out * gout) for a drawn gout (attention) or of the loss itself (losses).

PyTorch 1.13 has no F.scaled_dot_product_attention (2.0 does): its value is composed here from
matmul and softmax exactly as 2.0 defines it (Bool mask: true = attend; is_causal: the top-left
aligned lower triangle).
"""
import math

import torch
import torch.nn.functional as F

DTYPES = [("f64", torch.float64), ("f32", torch.float32)]


def emit(case, name, t):
    t = t.detach()
    if t.dtype in (torch.int64, torch.bool):
        dtype, t = "i64", t.to(torch.int64)
    else:
        dtype = "f32" if t.dtype == torch.float32 else "f64"
    vals = t.reshape(-1).tolist()
    # %.9g round-trips float32, %.17g float64.
    fmt = {"i64": lambda v: str(int(v)), "f32": lambda v: "%.9g" % v, "f64": lambda v: "%.17g" % v}[dtype]
    print(f"{case}.{name} {dtype} {t.dim()} " + " ".join(str(s) for s in t.shape) +
          (" " if t.dim() else "") + " ".join(fmt(v) for v in vals))


def draw(dt, *shape):
    return torch.randn(*shape, dtype=torch.float64).to(dt)


def sdpa(q, k, v, mask=None, causal=False):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.softmax(scores, -1) @ v


def sdpa_case(name, seed, qs, ks, vs, mask_kind=None, causal=False):
    for suffix, dt in DTYPES:
        torch.manual_seed(seed)
        c = f"{name}_{suffix}"
        q, k, v = (draw(dt, *s).requires_grad_(True) for s in (qs, ks, vs))
        mask = None
        if mask_kind == "float":
            mask = draw(dt, qs[-2], ks[-2])
        elif mask_kind == "bool":
            mask = torch.rand(qs[0], 1, qs[-2], ks[-2], dtype=torch.float64) > 0.4
            mask[..., 0] = True  # every query attends to at least one key
        out = sdpa(q, k, v, mask, causal)
        gout = draw(dt, *out.shape)
        (out * gout).sum().backward()
        for n, t in (("q", q), ("k", k), ("v", v)):
            emit(c, n, t)
        if mask is not None:
            emit(c, "mask", mask)
        emit(c, "gout", gout)
        emit(c, "out", out)
        for n, t in (("q", q), ("k", k), ("v", v)):
            emit(c, "grad_" + n, t.grad)


def mha_case(name, seed, batch_first, mask_kind):
    e, h, b, t_len, s_len = 8, 2, 3, 4, 5
    for suffix, dt in DTYPES:
        torch.manual_seed(seed)
        c = f"{name}_{suffix}"
        m = torch.nn.MultiheadAttention(e, h, batch_first=batch_first).to(dt)
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(draw(dt, *p.shape) * 0.5)
        if mask_kind == "causal":  # self-attention, a Bool mask with true = masked out
            s_len = t_len
            x = draw(dt, *((b, t_len, e) if batch_first else (t_len, b, e))).requires_grad_(True)
            query = key = value = x
            mask = torch.ones(t_len, t_len, dtype=torch.bool).triu(1)
            inputs = (("x", x),)
        else:
            shp = (lambda n: (b, n, e)) if batch_first else (lambda n: (n, b, e))
            query = draw(dt, *shp(t_len)).requires_grad_(True)
            key = draw(dt, *shp(s_len)).requires_grad_(True)
            value = draw(dt, *shp(s_len)).requires_grad_(True)
            mask = draw(dt, t_len, s_len)
            inputs = (("query", query), ("key", key), ("value", value))
        out, _ = m(query, key, value, attn_mask=mask, need_weights=False)
        gout = draw(dt, *out.shape)
        (out * gout).sum().backward()
        for n, p in m.named_parameters():
            emit(c, n, p)
        for n, t in inputs:
            emit(c, n, t)
        emit(c, "mask", mask)
        emit(c, "gout", gout)
        emit(c, "out", out)
        for n, t in inputs:
            emit(c, "grad_" + n, t.grad)
        for n, p in m.named_parameters():
            emit(c, "grad_" + n, p.grad)


def mha_padded_case(name, seed, batch_first, mask_kind, average):
    """key_padding_mask (Bool, true = padding) with an attention mask, and need_weights: the
    gradient flows through both outputs (sum(out * gout) + sum(weights * gw))."""
    e, h, b, t_len, s_len = 8, 2, 3, 4, 5
    for suffix, dt in DTYPES:
        torch.manual_seed(seed)
        c = f"{name}_{suffix}"
        m = torch.nn.MultiheadAttention(e, h, batch_first=batch_first).to(dt)
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(draw(dt, *p.shape) * 0.5)
        if mask_kind == "causal":
            s_len = t_len
            mask = torch.ones(t_len, t_len, dtype=torch.bool).triu(1)
        else:
            mask = draw(dt, t_len, s_len)
        shp = (lambda n: (b, n, e)) if batch_first else (lambda n: (n, b, e))
        query = draw(dt, *shp(t_len)).requires_grad_(True)
        key = draw(dt, *shp(s_len)).requires_grad_(True)
        value = draw(dt, *shp(s_len)).requires_grad_(True)
        # Item i pads its last i keys; key 0 is never padded (no row is wholly masked, even causal).
        kpm = torch.zeros(b, s_len, dtype=torch.bool)
        for i in range(b):
            if i:
                kpm[i, s_len - i:] = True
        out, w = m(query, key, value, key_padding_mask=kpm, need_weights=True, attn_mask=mask,
                   average_attn_weights=average)
        gout = draw(dt, *out.shape)
        gw = draw(dt, *w.shape)
        ((out * gout).sum() + (w * gw).sum()).backward()
        for n, p in m.named_parameters():
            emit(c, n, p)
        for n, t in (("query", query), ("key", key), ("value", value)):
            emit(c, n, t)
        emit(c, "mask", mask)
        emit(c, "kpm", kpm)
        emit(c, "gout", gout)
        emit(c, "gw", gw)
        emit(c, "out", out)
        emit(c, "weights", w)
        for n, t in (("query", query), ("key", key), ("value", value)):
            emit(c, "grad_" + n, t.grad)
        for n, p in m.named_parameters():
            emit(c, "grad_" + n, p.grad)


def class_targets(shape, classes, ignore):
    t = torch.randint(0, classes, shape)
    if ignore:
        t[torch.rand(shape) < 0.3] = -100
        t.view(-1)[0] = -100  # at least one ignored
        t.view(-1)[1] = 1     # and at least one counted
    return t


def class_case(name, seed, fn, shape, reduction, weight=False, ignore=False, smoothing=0.0):
    """fn: 'cross_entropy' (logits) or 'nll_loss' (log_softmax of the drawn values)."""
    for suffix, dt in DTYPES:
        torch.manual_seed(seed)
        c = f"{name}_{suffix}"
        x = draw(dt, *shape).requires_grad_(True)
        classes = shape[1] if len(shape) > 1 else shape[0]
        tshape = (shape[0],) + tuple(shape[2:]) if len(shape) > 1 else ()
        t = class_targets(tshape, classes, ignore) if tshape else torch.randint(0, classes, ())
        w = draw(dt, classes).abs() + 0.1 if weight else None
        if fn == "cross_entropy":
            loss = F.cross_entropy(x, t, weight=w, reduction=reduction, label_smoothing=smoothing)
        else:
            x2 = torch.log_softmax(x.detach(), 1 if len(shape) > 1 else 0).requires_grad_(True)
            x = x2
            loss = F.nll_loss(x, t, weight=w, reduction=reduction)
        loss.backward()
        emit(c, "x", x)
        emit(c, "t", t)
        if w is not None:
            emit(c, "w", w)
        emit(c, "loss", loss)
        emit(c, "grad", x.grad)


def bce_case(name, seed, shape, reduction, weight=False, pos_weight=False):
    for suffix, dt in DTYPES:
        torch.manual_seed(seed)
        c = f"{name}_{suffix}"
        x = (draw(dt, *shape) * 4).requires_grad_(True)
        x.data.view(-1)[0] = 0.0   # the point where |x| has a kink
        x.data.view(-1)[1] = 40.0  # large logits stay finite
        x.data.view(-1)[2] = -40.0
        y = torch.rand(*shape, dtype=torch.float64).to(dt)
        w = draw(dt, *shape[1:]).abs() if weight else None
        pw = draw(dt, shape[-1]).abs() + 0.5 if pos_weight else None
        loss = F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw,
                                                  reduction=reduction)
        loss.backward()
        emit(c, "x", x)
        emit(c, "y", y)
        if w is not None:
            emit(c, "w", w)
        if pw is not None:
            emit(c, "pw", pw)
        emit(c, "loss", loss)
        emit(c, "grad", x.grad)


print(f"# generated by tools/golden/attention_loss_golden.py with torch {torch.__version__}")
sdpa_case("sdpa_plain", 1, (2, 2, 4, 5), (2, 2, 6, 5), (2, 2, 6, 7))
sdpa_case("sdpa_float_mask", 2, (2, 2, 4, 5), (2, 2, 6, 5), (2, 2, 6, 3), mask_kind="float")
sdpa_case("sdpa_bool_mask", 3, (2, 2, 4, 5), (2, 2, 6, 5), (2, 2, 6, 3), mask_kind="bool")
sdpa_case("sdpa_causal", 4, (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4), causal=True)
sdpa_case("sdpa_causal_short", 5, (1, 2, 3, 4), (1, 2, 6, 4), (1, 2, 6, 4), causal=True)
mha_case("mha_cross", 10, False, "float")
mha_case("mha_causal", 11, True, "causal")
class_case("ce_mean", 20, "cross_entropy", (5, 4), "mean")
class_case("ce_sum", 21, "cross_entropy", (5, 4), "sum")
class_case("ce_one", 22, "cross_entropy", (4,), "mean")
class_case("ce_weight", 23, "cross_entropy", (6, 4), "mean", weight=True)
class_case("ce_ignore", 24, "cross_entropy", (7, 4), "mean", ignore=True)
class_case("ce_smooth", 25, "cross_entropy", (6, 5), "mean", smoothing=0.2)
class_case("ce_smooth_ignore", 26, "cross_entropy", (7, 5), "mean", ignore=True, smoothing=0.3)
class_case("ce_all_mean", 27, "cross_entropy", (7, 5), "mean", True, True, 0.15)
class_case("ce_all_sum", 28, "cross_entropy", (7, 5), "sum", True, True, 0.15)
class_case("ce_nd", 29, "cross_entropy", (3, 4, 2, 5), "mean", True, True, 0.1)
class_case("nll_mean", 30, "nll_loss", (5, 4), "mean")
class_case("nll_weight_ignore", 31, "nll_loss", (7, 4), "mean", weight=True, ignore=True)
class_case("nll_sum_nd", 32, "nll_loss", (3, 4, 5), "sum", weight=True, ignore=True)
bce_case("bce_mean", 40, (4, 3), "mean")
bce_case("bce_weight", 41, (4, 3), "mean", weight=True)
bce_case("bce_pos_weight", 42, (4, 3), "sum", pos_weight=True)
bce_case("bce_both", 43, (2, 4, 3), "mean", weight=True, pos_weight=True)
mha_padded_case("mha_padded", 12, False, "float", True)
mha_padded_case("mha_padded_causal", 13, True, "causal", False)
