"""ptx_sim extended for the tile-value replay (toolchain/compiler/frontend/lower_tile.py):
per-thread `.local` arrays and the rounded f32 forms the replay emits. The f32 models are
written here from IEEE 754, not taken from the compiler: add/sub/mul/div.rn are numpy
float32 operations (correctly rounded), fma.rn is the exact rational a*b + c rounded once
to nearest even, ex2.approx.ftz is numpy's float32 exp2 with subnormals flushed (the
tests compare exp2 results within the instruction's 2 ulp, never bit for bit)."""
from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

from .ptx_sim import Sim, bits_f32, f32_bits

_LOCAL = re.compile(r"^\s*\.local\s.*?\.b8\s+(\w+)\[(\d+)\]")
_TINY = np.float32(2.0 ** -126)


def round_f32(x: Fraction) -> np.float32:
    """x rounded to the nearest float32, ties to even (finite range; overflow to inf)."""
    guess = np.float32(float(x))
    if not np.isfinite(guess):
        return guess
    best = guess
    for cand in (np.nextafter(guess, np.float32(-np.inf)), np.nextafter(guess, np.float32(np.inf))):
        if not np.isfinite(cand):
            continue
        d_best, d_cand = abs(Fraction(float(best)) - x), abs(Fraction(float(cand)) - x)
        if d_cand < d_best or (d_cand == d_best and int(cand.view(np.uint32)) % 2 == 0):
            best = cand
    if best == 0 and x < 0:
        return np.float32(-0.0)
    return best


def fma_f32(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    p, c64 = float(a) * float(b), float(c)      # the f32 product is exact in float64
    s = p + c64
    bb = s - p
    if (p - (s - bb)) + (c64 - bb) == 0.0:     # TwoSum: the float64 sum is exact too
        return np.float32(s)                    # one rounding, float64 -> float32
    exact = Fraction(p) + Fraction(c64)
    if exact == 0:          # the sign of an exact zero: + unless both terms are -0
        prod_neg = (np.signbit(a) != np.signbit(b))
        return np.float32(-0.0) if prod_neg and np.signbit(c) else np.float32(0.0)
    return round_f32(exact)


def ex2_ftz(a: np.float32) -> np.float32:
    if abs(a) < _TINY:
        a = np.float32(0.0)
    with np.errstate(all="ignore"):
        r = np.exp2(np.float32(a), dtype=np.float32)
    return np.float32(0.0) if abs(r) < _TINY else r


class TileSim(Sim):
    def __init__(self, ptx, kernel: str):
        super().__init__(ptx, kernel)
        decls = list(ptx.function(kernel).decls)
        self.local_sizes = {m.group(1): int(m.group(2)) for d in decls
                            for m in [_LOCAL.search(d)] if m}
        self.local_addr: dict[tuple, int] = {}

    def _local(self, th, name: str) -> int:
        key = (th.ctaid, th.lin, name)
        if key not in self.local_addr:
            self.local_addr[key] = self.mem.alloc(
                f"{name}@{key}", np.zeros(self.local_sizes[name], np.uint8))
        return self.local_addr[key]

    def _step(self, th) -> None:
        if th.pc < len(self.code):
            guard, negated, op, ops = self.code[th.pc]
            on = guard is None or bool(th.val(guard)) != negated
            if on and self._tile_op(th, op, ops):
                th.pc += 1
                self.steps += 1
                return
        super()._step(th)

    def _tile_op(self, th, op: str, ops) -> bool:
        if op == "mov.u64" and isinstance(ops[1], str) and ops[1] in self.local_sizes:
            th.regs[ops[0]] = self._local(th, ops[1])
            return True
        f = lambda r: np.float32(bits_f32(th.val(r)))      # noqa: E731
        with np.errstate(all="ignore"):
            if op in ("add.rn.f32", "sub.rn.f32", "mul.rn.f32", "div.rn.f32"):
                a, b = f(ops[1]), f(ops[2])
                r = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                     "div": np.divide}[op[:3]](a, b, dtype=np.float32)
            elif op == "fma.rn.f32":
                r = fma_f32(f(ops[1]), f(ops[2]), f(ops[3]))
            elif op == "ex2.approx.ftz.f32":
                r = ex2_ftz(f(ops[1]))
            elif op == "neg.f32":
                th.regs[ops[0]] = th.val(ops[1]) ^ 0x80000000
                return True
            else:
                return False
        th.regs[ops[0]] = int(np.float32(r).view(np.uint32))
        return True


def run_tiles(objects, kernel: str, block: int, args, grid=1):
    """Run `kernel` (compiled PTX objects) and return the Memory (SimError on anything the
    interpreter does not model)."""
    return TileSim(objects, kernel).run(grid, block, args)


__all__ = ["TileSim", "run_tiles", "fma_f32", "round_f32", "ex2_ftz", "f32_bits"]
