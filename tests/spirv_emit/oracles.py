"""CPU oracles (numpy) for the executed SPIR-V emitter tests: exact integer/bit semantics of
the packed intrinsics, written independently of the emitter."""
from __future__ import annotations

import numpy as np


def _bytes(x: int, signed: bool) -> list[int]:
    out = [(x >> (8 * i)) & 0xFF for i in range(4)]
    return [v - 256 if signed and v >= 128 else v for v in out]


def _halves(x: int, signed: bool) -> list[int]:
    out = [x & 0xFFFF, x >> 16]
    return [v - 65536 if signed and v >= 32768 else v for v in out]


def dp4a(a: int, b: int, c: int, signed: bool) -> int:
    cc = c - (1 << 32) if signed and c >= 1 << 31 else c
    s = cc + sum(x * y for x, y in zip(_bytes(a, signed), _bytes(b, signed)))
    return s & 0xFFFFFFFF


def dp2a(a: int, b: int, c: int, signed: bool, hi: bool) -> int:
    cc = c - (1 << 32) if signed and c >= 1 << 31 else c
    bs = _bytes(b, signed)[2:] if hi else _bytes(b, signed)[:2]
    return (cc + sum(x * y for x, y in zip(_halves(a, signed), bs))) & 0xFFFFFFFF


def prmt(a: int, b: int, sel: int) -> int:
    both = a | (b << 32)
    out = 0
    for k in range(4):
        nib = (sel >> (4 * k)) & 0xF
        byte = (both >> (8 * (nib & 7))) & 0xFF
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * k)
    return out


def f2h(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).view(np.uint16)


def h2f(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint16).view(np.float16).astype(np.float32)


def f2bf(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even to bf16 bits, NaN -> 0x7FC0 (exact integer reference)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    return np.where(np.isnan(x), 0x7FC0, rounded).astype(np.uint16)


def bf2f(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def half2(op: str, *packed: np.ndarray) -> np.ndarray:
    """Exact packed-half add/mul/fma: computed in float64 (exact for these), rounded once."""
    parts = []
    for shift in (0, 16):
        xs = [h2f((p >> shift) & 0xFFFF).astype(np.float64) for p in packed]
        r = xs[0] + xs[1] if op == "add" else xs[0] * xs[1] if op == "mul" else \
            xs[0] * xs[1] + xs[2]
        parts.append(r.astype(np.float16).view(np.uint16).astype(np.uint32))
    return parts[0] | (parts[1] << 16)
