#!/usr/bin/python3
"""The PyTorch peer of the main job (examples/train_fashion_mnist): the same MLP or conv net,
optimizer, batch and epochs on Debian's dataset-fashion-mnist, in one process.

Usage: OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/peers/fashion_mnist_torch.py
           [--model mlp|cnn] [--hidden 512,512] [--epochs 10] [--batch 128] [--lr 1e-3]
           [--threads T] [--data DIR]
       (--model cnn too: its Linear layers are OpenBLAS GEMMs; its convolutions are oneDNN's)
Model: mlp: 784 - hidden (ReLU) - 10; cnn: the example's make_cnn (fashion_mnist.h): two
blocks of Conv2d 3x3 pad 1 (no bias) + BatchNorm2d + ReLU + MaxPool2d 2 (32, 64 channels),
Linear 3136-128 + ReLU, Linear 128-10. Cross-entropy, Adam(lr); pixels scaled to [0, 1]; a fresh shuffle per epoch; the test
set evaluated in chunks of 1000 (as the example), in eval mode. Prints, per epoch: epoch, last
batch loss, test accuracy, seconds since the start of training (data loading excluded, as the
example's training time excludes it) and the process's CPU seconds over the same span.
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch


def read_idx(path, header_bytes):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=header_bytes)


def load(data, split):
    images = read_idx(os.path.join(data, f"{split}-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(data, f"{split}-labels-idx1-ubyte.gz"), 8)
    x = torch.from_numpy(images.reshape(-1, 784).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


def make_mlp(hidden_sizes):
    layers, width = [], 784
    for hidden in (int(h) for h in hidden_sizes.split(",")):
        layers += [torch.nn.Linear(width, hidden), torch.nn.ReLU()]
        width = hidden
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))


def make_cnn():
    nn = torch.nn
    return nn.Sequential(
        nn.Unflatten(1, (1, 28, 28)),
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--hidden", default="512,512")
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    model = make_cnn() if args.model == "cnn" else make_mlp(args.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    print("epoch loss test_accuracy seconds cpu_seconds", flush=True)
    start, cpu_start = time.perf_counter(), time.process_time()
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(train_x))
        for first in range(0, len(train_x), args.batch):
            rows = order[first:first + args.batch]
            loss = torch.nn.functional.cross_entropy(model(train_x[rows]), train_y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum().item()
                          for i in range(0, len(test_x), 1000))
        model.train()
        accuracy = correct / len(test_x)
        print(f"{epoch} {loss.item():.4f} {accuracy:.4f} {time.perf_counter() - start:.1f} "
              f"{time.process_time() - cpu_start:.1f}",
              flush=True)


if __name__ == "__main__":
    main()
