"""Explicit rejection of the cooperative tensor operations by the OpenCL 2.0 SPIR-V profile.

gpu.md: "The OpenCL 2.0 SPIR-V profile also rejects the operation explicitly" — it has no
cooperative-matrix capability and no exact collective ordering for these memory operations,
so tensor.mma, tensor.matmul, tensor.epilogue and tensor.transfer are capability errors (E0510) at the
operation's source span, never a silent scalar fallback. Hooked into the emitter's op table
with `LOWER.update(tensor_reject.LOWER)`.
"""
from __future__ import annotations

from . import capabilities as caps

_SOURCE = {"tensor.mma": "tensor_mma", "tensor.matmul": "tensor_matmul",
           "tensor.epilogue": "tensor_epilogue", "tensor.transfer": "tensor_transfer_workgroup"}
_WHY = {"tensor.transfer": "no exact cooperative lowering in this profile yet"}


def reject(em, ins) -> None:
    why = _WHY.get(ins.op, "no cooperative-matrix capability")
    raise caps.unsupported(ins, f"{_SOURCE[ins.op]} (tensor operation {ins.op}, {why})",
                           help="tensor operations need --emit-ptx")


LOWER = {op: reject for op in _SOURCE}
