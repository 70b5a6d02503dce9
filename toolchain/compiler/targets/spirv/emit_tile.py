"""The scalar operations tile values lower to (frontend/lower_tile.py), in OpenCL SPIR-V.

math.rn -> OpFAdd/OpFSub/OpFMul/OpFDiv, and the kernel gets `OpExecutionMode
ContractionOff` (emit.py; NoContraction is a Shader-only decoration), so no consumer
fuses them into an fma and the bits are the IEEE operation's (OpFDiv is correctly rounded
only where the device divides correctly, docs/reference/tiles.md "Targets"); math.fma ->
OpenCL.std fma (one rounding); math.exp2 -> OpenCL.std exp2 (at most 3 ulp, where PTX's
ex2.approx.ftz has 2); tile.uniform is checked by ir/uniformity.py and emits nothing.
"""
from __future__ import annotations

from ...ir.types import FloatType
from . import capabilities as caps
from .emit_function import register

_RN = {"add": "OpFAdd", "sub": "OpFSub", "mul": "OpFMul", "div": "OpFDiv"}


def _float(ins) -> None:
    if not isinstance(ins.type, FloatType):
        raise caps.bad_operand(ins, f"{ins.op} on {ins.type}")


def lower_rn(em, ins) -> None:
    _float(ins)
    a, b = (em.val(v) for v in ins.operands)
    em.define(ins, em.op(_RN[ins.attrs["op"]], em.types.value(ins.type), a, b))


def lower_fma(em, ins) -> None:
    _float(ins)
    em.define(ins, em.ext(em.types.value(ins.type), "fma",
                          *(em.val(v) for v in ins.operands)))


def lower_exp2(em, ins) -> None:
    _float(ins)
    em.define(ins, em.ext(em.types.value(ins.type), "exp2", em.val(ins.operands[0])))


def lower_uniform(em, ins) -> None:
    """No code: the marker only carries the operation's operands to the verifier."""


register({"math.rn": lower_rn, "math.fma": lower_fma, "math.exp2": lower_exp2,
          "tile.uniform": lower_uniform})
