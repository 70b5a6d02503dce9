"""PTX lowering of the scalar operations tile values lower to (frontend/lower_tile.py).

math.rn -> add/sub/mul/div.rn.f32 (never contracted, so a tile's arithmetic has the same
bits on every profile); math.fma -> fma.rn.f32; math.exp2 -> ex2.approx.ftz.f32, the
instruction tiles.md names as tile_exp2's definition on PTX; tile.uniform marks a tile
operation for the uniformity verifier and emits nothing; tile.mma (frontend/tile_mma.py,
only on profiles with the form) -> one mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Const, Instr
from ...ir.types import FloatType
from . import ops, regs
from .instr import Vec


def _f32(ins: Instr) -> None:
    if ins.type != FloatType(32):
        raise error("E0505", f"{ins.op} on {ins.type} has no PTX lowering (f32 only)",
                    ins.span)


def lower_rn(em, ins: Instr) -> None:
    _f32(ins)
    a, b = (em.reg(v) for v in ins.operands)
    em.put(ops.float_rn(ins.attrs["op"], "f32", em.result(ins), a, b))


def lower_fma(em, ins: Instr) -> None:
    _f32(ins)
    a, b, c = (em.reg(v) for v in ins.operands)
    em.put(ops.fma_rn("f32", em.result(ins), a, b, c))


def lower_exp2(em, ins: Instr) -> None:
    _f32(ins)
    em.put(ops.ex2_approx_ftz(em.result(ins), em.reg(ins.operands[0])))


def lower_uniform(em, ins: Instr) -> None:
    """Checked by ir/uniformity.py before any backend runs; no code."""


def lower_mma(em, ins: Instr) -> None:
    """d = a*b + c of one warp: operands a0..a3, b0, b1 (packed 16-bit pairs), c0..c3."""
    fmt = ins.attrs["format"]
    spelling = f"mma.sync.aligned.m16n8k16.row.col.f32.{fmt}.{fmt}.f32"
    src = []
    for v in ins.operands:
        r = em.reg(v)
        if isinstance(v, Const):            # a fragment register, never an immediate
            r = em.new_t(v.type)
            em.op(ops.MOV[regs.bits(v.type)], r, em.reg(v))
        src.append(r)
    d = Vec([em.new_t(FloatType(32)) for _ in range(4)])
    em.put(ops.mma_sync(spelling, d.regs, src[:4], src[4:6], src[6:]))
    em.define(ins, d)


LOWER = {"tile.mma": lower_mma, "math.rn": lower_rn, "math.fma": lower_fma, "math.exp2": lower_exp2,
         "tile.uniform": lower_uniform}
