"""Host side of `tensor_transfer_workgroup`'s `view:`: a CUtensorMap encoded by the driver.

gpu.md: a non-null view points to an immutable CUtensorMap in global memory whose address,
rank, dimensions and strides exactly match the raw operand and descriptor: tiled encoding,
no interleave, no shared-memory swizzle, zero fill, boxDim[d] = tile[d] * element_stride[d]
and the descriptor's element strides. `encode_tiled` returns the map's 128 bytes
(cuTensorMapEncodeTiled); `device_view` uploads them to a fresh device allocation (the
driver's allocations are at least 256-byte aligned, the map needs 64).
"""
from __future__ import annotations

import ctypes

from . import driver

MAP_BYTES = 128
# CUtensorMapDataType: a bit-exact copy only needs the width for the integer formats
DATA_TYPE = {"u8": 0, "i8": 0, "u16": 1, "i16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5,
             "f16": 6, "f32": 7, "f64": 8, "bf16": 9}


def encode_tiled(base: int, element: str, extents, strides, tiles, element_strides) -> bytes:
    """The 128-byte map for the tensor at device address `base`: `extents` in elements,
    `strides` in bytes (strides[0] is the element size and is implied), `tiles` and
    `element_strides` per dimension (dimension 0 fastest)."""
    rank = len(extents)
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    out = (ctypes.c_uint8 * MAP_BYTES)()
    dims = (u64 * rank)(*extents)
    gstrides = (u64 * max(rank - 1, 1))(*(list(strides[1:]) or [0]))
    box = (u32 * rank)(*(t * e for t, e in zip(tiles, element_strides)))
    estr = (u32 * rank)(*element_strides)
    driver.call("cuTensorMapEncodeTiled", ctypes.byref(out), DATA_TYPE[element], rank,
                ctypes.c_void_p(base), dims, gstrides, box, estr, 0, 0, 0, 0)
    return bytes(out)


def device_view(device, base: int, element: str, extents, strides, tiles, element_strides,
                offset: int = 0):
    """Upload the map to device memory; returns (DeviceBuffer, address of the map). A
    non-zero `offset` places it off the 64-byte boundary (tests of the run-time fallback)."""
    image = encode_tiled(base, element, extents, strides, tiles, element_strides)
    buf = device.alloc(MAP_BYTES + offset)
    device.upload(buf, bytes(offset) + image)
    return buf, buf.ptr + offset
