"""PTX lowering of the cooperative tensor operations (one concept per file):
capabilities.py (family/shape selection and refusals), common.py (operand views, 64-bit
addressing), wmma.py (stable WMMA grids), mma.py (tensor.mma), replay.py (exact
cooperative scalar replay), matmul.py (tensor.matmul regions), epilogue.py
(tensor.epilogue), resident.py (accumulators kept across the optimizer's tensor chains and
K loops), wgmma_split.py (workgroup-scope regions: wgmma.py with tma.py and mbarrier.py on
sm_90a, split subgroup regions elsewhere), transfer.py (tensor_transfer_workgroup: exact
replay, TMA with a view); the mma.sync families: narrow.py (routing + their regions),
frag.py (fragment maps and loads), mma_sync.py (m16n8 tile grids), fp8.py (E4M3/E5M2),
sparse.py (structured 2:4 mma.sp), scaled.py (block-scaled, sm_120a/121a).
`LOWER` joins the PTX op table in emitter.py.
"""
from __future__ import annotations

from .epilogue import lower_epilogue
from .mma import lower_mma
from .resident import lower_begin, lower_commit
from .transfer import lower_transfer
from .wgmma_split import lower_any_matmul

LOWER = {"tensor.mma": lower_mma, "tensor.matmul": lower_any_matmul,
         "tensor.epilogue": lower_epilogue, "tensor.acc_begin": lower_begin,
         "tensor.acc_commit": lower_commit, "tensor.transfer": lower_transfer}
