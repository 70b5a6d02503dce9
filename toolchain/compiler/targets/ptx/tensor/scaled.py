"""Block-scaled FP8/FP6/FP4 tensor operations (mxf8f6f4, MXFP4, NVFP4) on PTX."""
from __future__ import annotations

from .capabilities import refuse


def tile_lowering(desc, profile, span):
    raise refuse(desc, "block-scaled MMA is not implemented yet", span)
