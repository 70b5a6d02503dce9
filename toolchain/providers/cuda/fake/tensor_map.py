"""The 128 bytes the fake driver's cuTensorMapEncodeTiled writes (fake_cuda.c): its
arguments, little-endian, so a test can check what reached device memory."""
from __future__ import annotations

import struct


def image(base: int, dtype: int, dims, strides, box, element_strides) -> bytes:
    """base (u64), dtype and rank (u32), dims[5] (u64), box[5] and element_strides[5] (u32),
    strides[4] (u64: the rank-1 byte strides of dimensions 1..); unused slots zero."""
    pad = lambda v, n: list(v) + [0] * (n - len(v))  # noqa: E731
    return (struct.pack("<QII", base, dtype, len(dims)) + struct.pack("<5Q", *pad(dims, 5))
            + struct.pack("<5I", *pad(box, 5)) + struct.pack("<5I", *pad(element_strides, 5))
            + struct.pack("<4Q", *pad(strides, 4)))
