#!/usr/bin/python3
"""The PyTorch peer of examples/train_char_lm: the same GPT, data, split, batch, schedule and
steps, in one process (PyTorch 1.13 CPU; its attention is the plain composition, 1.13 has no
fused one). Initialisation and batch draws come from torch's own generator, so the comparison is
of the loss curves, not of bits.

Usage: /usr/bin/python3 bench/peers/train_char_lm.py [--steps 1500] [--batch 16] [--context 64]
           [--embed 64] [--heads 4] [--layers 2] [--lr 2e-3] [--warmup 100] [--threads 2]
Prints, every --eval-every steps: step, mean train loss since the last line, validation loss
(the same evenly spaced validation batches as the example), seconds of training; then the mean
step time.
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_corpus(directory):
    names = sorted(n for n in os.listdir(directory)
                   if not n.endswith((".dat", ".u8"))
                   and os.path.isfile(os.path.join(directory, n))
                   and not os.path.islink(os.path.join(directory, n)))
    text = b"".join(open(os.path.join(directory, n), "rb").read() for n in names)
    alphabet = sorted(set(text))
    index = {b: i for i, b in enumerate(alphabet)}
    ids = torch.tensor([index[b] for b in text], dtype=torch.int64)
    split = len(text) * 9 // 10
    return ids[:split], ids[split:], len(alphabet)


class Block(nn.Module):
    def __init__(self, e, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(e)
        self.attn = nn.MultiheadAttention(e, h, batch_first=True)
        self.ln2 = nn.LayerNorm(e)
        self.fc = nn.Linear(e, 4 * e)
        self.proj = nn.Linear(4 * e, e)

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab, context, e, h, layers):
        super().__init__()
        self.tok = nn.Embedding(vocab, e)
        self.pos = nn.Embedding(context, e)
        nn.init.normal_(self.tok.weight, 0.0, 0.02)
        nn.init.normal_(self.pos.weight, 0.0, 0.02)
        self.blocks = nn.ModuleList(Block(e, h) for _ in range(layers))
        self.ln_f = nn.LayerNorm(e)

    def forward(self, tokens):
        t = tokens.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)  # true = masked out
        x = self.tok(tokens) + self.pos(torch.arange(t))
        for b in self.blocks:
            x = b(x, mask)
        return self.ln_f(x) @ self.tok.weight.t()  # tied head


def lr_at(step, lr, warmup, total, start_factor=1.0 / 3.0):
    """ruccl's WarmupCosineLr: linear warm-up from lr/3, then cosine to 0."""
    if step < warmup:
        return lr * (start_factor + (1 - start_factor) * step / warmup)
    return lr * 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))


def batch(text, starts, context):
    x = torch.stack([text[s:s + context] for s in starts])
    y = torch.stack([text[s + 1:s + 1 + context] for s in starts])
    return x, y


def main():
    p = argparse.ArgumentParser()
    for name, default in (("steps", 1500), ("batch", 16), ("context", 64), ("embed", 64),
                          ("heads", 4), ("layers", 2), ("warmup", 100), ("eval_every", 250),
                          ("eval_batches", 8), ("threads", 2), ("seed", 0)):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--data", default="/usr/share/games/fortunes")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train, val, vocab = read_corpus(a.data)
    model = Gpt(vocab, a.context, a.embed, a.heads, a.layers)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    count = a.eval_batches * a.batch
    span = len(val) - a.context - 1
    val_starts = [i * span // count for i in range(count)]

    def validation_loss():
        with torch.no_grad():
            total = 0.0
            for b in range(0, count, a.batch):
                x, y = batch(val, val_starts[b:b + a.batch], a.context)
                total += F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1),
                                         reduction="sum").item()
            return total / (count * a.context)

    print(f"fortunes: {len(train)} train, {len(val)} validation, vocabulary {vocab}; "
          f"torch {torch.__version__}, {a.threads} threads")
    train_seconds, pending, pending_steps = 0.0, 0.0, 0
    for step in range(a.steps):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.lr, a.warmup, a.steps)
        starts = torch.randint(0, len(train) - a.context - 1, (a.batch,)).tolist()
        x, y = batch(train, starts, a.context)
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        train_seconds += time.perf_counter() - t0
        pending += loss.item()
        pending_steps += 1
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            print(f"step {step + 1:5d}  train loss {pending / pending_steps:.4f}  "
                  f"validation loss {validation_loss():.4f}  {train_seconds:.1f} s", flush=True)
            pending, pending_steps = 0.0, 0
    print(f"done: validation loss {validation_loss():.4f} after {a.steps} steps, "
          f"{1000 * train_seconds / a.steps:.1f} ms per step")


if __name__ == "__main__":
    main()
