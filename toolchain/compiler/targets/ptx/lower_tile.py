"""PTX lowering of the scalar operations tile values lower to (frontend/lower_tile.py).

math.rn -> add/sub/mul/div.rn.f32 (never contracted, so a tile's arithmetic has the same
bits on every profile); math.fma -> fma.rn.f32; math.exp2 -> ex2.approx.ftz.f32, the
instruction tiles.md names as tile_exp2's definition on PTX; tile.uniform marks a tile
operation for the uniformity verifier and emits nothing.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Instr
from ...ir.types import FloatType
from . import ops


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


LOWER = {"math.rn": lower_rn, "math.fma": lower_fma, "math.exp2": lower_exp2,
         "tile.uniform": lower_uniform}
