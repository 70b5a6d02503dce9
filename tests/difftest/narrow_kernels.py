"""Kernels that compute every operator on two narrow integers (int8, uint8, int16, uint16)
per work item, and the Python oracle of C integer promotion (LANGUAGE §12.10) for them.
Shared by the offline/PoCL test and the GPU test."""
from __future__ import annotations

import random

NARROW = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False)}
EXPRS = ["x + y", "x - y", "x * y", "x / y", "x % y", "x & y", "x | y", "x ^ y",
         "x << (y & 15)", "x >> (y & 7)", "x < y", "x <= y", "x > y", "x >= y", "x == y",
         "x != y", "-x", "~x", "x == -1", "x + 300", "s", "m"]
N = 256
BLOCK = 64


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def source(t: str) -> str:
    body = [f"out[i * {len(EXPRS)} + {k}] = {e};" for k, e in enumerate(EXPRS)]
    return (f"kernel narrow_{t}(out: int32*, a: {t}*, b: {t}*, n: int32) {{\n"
            "    var i: int32 = (int32)(block.x * block_dim.x + thread.x);\n"
            "    if (i < n) {\n"
            f"        var x: {t} = a[i];\n        var y: {t} = b[i];\n"
            f"        var s: {t} = x + y;\n        var m: {t} = x * y;\n        " +
            "\n        ".join(body) + "\n    }\n}\n")


def inputs(t: str, seed: int = 17) -> tuple[list[int], list[int]]:
    bits, signed = NARROW[t]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    rng = random.Random(seed)
    edges = [lo, hi, 1, 2, lo + 1, hi - 1, 7] + ([-1, -2] if signed else [200, 128])
    a = [rng.choice(edges) if k % 3 == 0 else rng.randint(lo, hi) for k in range(N)]
    b = [rng.choice(edges) if k % 4 == 0 else rng.randint(lo, hi) for k in range(N)]
    b = [v if v != 0 else 3 for v in b]              # no division by zero
    return a, b


def oracle(t: str, a: list[int], b: list[int]) -> list[int]:
    bits, signed = NARROW[t]
    w32 = lambda v: _wrap(v, 32, True)  # noqa: E731
    out = []
    for x, y in zip(a, b):
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        out += [w32(x + y), w32(x - y), w32(x * y), q, x - q * y, x & y, x | y, x ^ y,
                w32(x << (y & 15)), x >> (y & 7), int(x < y), int(x <= y), int(x > y),
                int(x >= y), int(x == y), int(x != y), -x, ~x, int(x == -1), x + 300,
                _wrap(x + y, bits, signed), _wrap(x * y, bits, signed)]
    return out
