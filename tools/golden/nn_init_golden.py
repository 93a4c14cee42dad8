#!/usr/bin/python3
"""nn_init_golden.py - the exact initial weights of nn::Linear(4, 2) drawn from the default
generator after ruccl::manual_seed(SEED), computed here from an independent Philox4x32-10 (the
Random123 definition, tensor/random/generator.h), for tests/autodiff/nn_default_generator_test.cpp.

Usage: /usr/bin/python3 tools/golden/nn_init_golden.py [OUT_DIR]   (default tests/data)

Linear(in = 4, out = 2) draws U(-1/sqrt(4), 1/sqrt(4)) = U(-0.5, 0.5): the weight's 8 values,
then the bias's 2, each (next_u32() >> 8) * 2^-24 * 1.0 - 0.5 in float32 -- exact, since the
24-bit uniform minus 0.5 is representable, so the C++ side must match bit for bit.
Writes nn_init_golden.txt: one line per seed, "SEED W0 .. W7 B0 B1", values as C99 hex floats.
It also checks the Random123 known-answer vector the C++ tests check.
"""
import os
import sys

M32 = 0xFFFFFFFF


def philox4x32_10(c, k):
    c, k = list(c), list(k)
    for r in range(10):
        if r > 0:
            k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
    return c


def words(seed):
    key = [seed & M32, seed >> 32]
    n = 0
    while True:
        for w in philox4x32_10([n & M32, n >> 32, 0, 0], key):
            yield w
        n += 1


assert philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]

SEEDS = [42, 67280421310721]  # 67280421310721: the default generator's seed without manual_seed


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data"
    lines = []
    for seed in SEEDS:
        stream = words(seed)
        values = [(next(stream) >> 8) * 2.0**-24 - 0.5 for _ in range(10)]
        lines.append(" ".join([str(seed)] + [v.hex() for v in values]))
    with open(os.path.join(out_dir, "nn_init_golden.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
