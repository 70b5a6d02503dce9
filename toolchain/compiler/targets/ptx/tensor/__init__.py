"""PTX lowering of the cooperative tensor operations (one concept per file):
capabilities.py (family/shape selection and refusals), common.py (operand views, 64-bit
addressing), wmma.py (stable WMMA grids), mma.py (tensor.mma), replay.py (exact
cooperative scalar replay), matmul.py (tensor.matmul regions), epilogue.py
(tensor.epilogue). `LOWER` joins the PTX op table in emitter.py.
"""
from __future__ import annotations

from .epilogue import lower_epilogue
from .matmul import lower_matmul
from .mma import lower_mma

LOWER = {"tensor.mma": lower_mma, "tensor.matmul": lower_matmul,
         "tensor.epilogue": lower_epilogue}
