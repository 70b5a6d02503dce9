"""wgmma shared-memory matrix descriptors decoded (tests only), from the PTX ISA's "Matrix
Descriptor Format" and "Shared Memory Matrix Layout" and the CUTLASS headers
(cute/arch/mma_sm90_desc.hpp, cute/atom/mma_traits_sm90_gmma.hpp), never from the
compiler.

The 64-bit descriptor (GmmaDescriptor in mma_sm90_desc.hpp): bits 0-13 the start address,
16-29 the leading byte offset (LBO), 32-45 the stride byte offset (SBO), each a byte count
>> 4 (the ISA's matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4, so shared addresses
count modulo 256 KiB); bits 49-51 the base offset; bits 62-63 the layout type:
0 interleave (no swizzle), 1 128-byte, 2 64-byte, 3 32-byte swizzle. Bits 14-15, 30-31,
46-48 and 52-61 are unused.

The canonical layouts (make_gmma_desc's comment in mma_traits_sm90_gmma.hpp), in elements,
with T = 16 bytes / element size and W = 1, 2, 4, 8 (16-byte units per swizzle row for
interleave, 32, 64, 128 bytes); a K-major operand is rows x K with K contiguous, an
MN-major one has the rows (M or N) contiguous:

    K-major   INTERLEAVE ((8,m),(T,2)):((1T,SBO),(1,LBO))
              swizzled   ((8,m),(T,2)):((WT,SBO),(1,T))          (LBO unused)
    MN-major  INTERLEAVE ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
              swizzled   ((T,W,m),(8,k)):((1,T,LBO),(WT,SBO))

and the swizzle Swizzle<log2 W, 4, 3> acts on the byte address (the smem_ptr_flag
composition): bits 4..4+log2 W ^= bits 7..7+log2 W (128B: 4-6 ^= 7-9; 64B: 4-5 ^= 7-8;
32B: 4 ^= 7). It is applied to the whole shared address, as the copy engine writes it;
the ISA asks for base offset = (start >> 7) & 7 when the start address is not aligned to
the pattern's repeat (1024, 512, 256 bytes). Read as "that absolute pattern", this was
checked on the H200 and is wrong: with B 384 bytes past a 1024-byte boundary and base
offset 3 the hardware read other bytes (tests/gpu/test_wgmma_model.py's first version,
2026-12-05; tests/gpu/wgmma_base_offset.py records what each field value reads). So the
model accepts a swizzled operand only with its start's pattern bits zero and base offset
0 (every descriptor the compiler builds: 1024-byte aligned tiles and stages, a K step
moving the start inside a 128-byte row), and refuses anything else rather than guess.
"""
from __future__ import annotations

import numpy as np

from .ptx_sim import SimError

WINDOW = 1 << 18                     # the 14-bit address field << 4: 256 KiB of shared memory
SWIZZLE_WIDTH = {0: 1, 1: 8, 2: 4, 3: 2}     # layout type -> W (16-byte units of a row)
SWIZZLE_NAME = {0: "interleave", 1: "128B", 2: "64B", 3: "32B"}


def fields(desc: int) -> dict:
    """The descriptor's fields, byte counts already multiplied back by 16."""
    return {"start": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4,
            "sbo": ((desc >> 32) & 0x3FFF) << 4, "base": (desc >> 49) & 7,
            "layout": (desc >> 62) & 3}


def element_offsets(desc: int, rows: int, k: int, elem_bytes: int,
                    mn_major: bool) -> np.ndarray:
    """(rows, k) shared-window offsets (0 .. 256 KiB, not wrapped) of the first byte of
    each element of the rows x k operand that `desc` names: element (r, c) is row r (M or
    N) and reduction index c."""
    f = fields(desc)
    w = SWIZZLE_WIDTH[f["layout"]]
    t = 16 // elem_bytes                          # elements per 16-byte unit
    start, lbo, sbo = f["start"], f["lbo"], f["sbo"]
    if w > 1:
        mask = w - 1                              # the pattern's phase bits: 7 .. 7+log2 W
        if (start >> 7) & mask or f["base"]:
            raise SimError(
                f"descriptor {desc:#x}: base offset {f['base']}, start address {start:#x} "
                f"at pattern phase {(start >> 7) & mask}: the model reads a "
                f"{SWIZZLE_NAME[f['layout']]} swizzled operand only from the swizzle's "
                f"repeat with base offset 0 (the H200 disagreed with the ISA's "
                f"base-offset reading)")
    r = np.arange(rows)[:, None]
    c = np.arange(k)[None, :]
    if not mn_major:
        if w == 1:    # ((8,m),(T,2)):((1T,SBO),(1,LBO)) in elements; 1T = 16 bytes
            off = (r % 8) * 16 + (r // 8) * sbo + (c % t) * elem_bytes + (c // t) * lbo
        else:         # ((8,m),(T,2)):((WT,SBO),(1,T)): a row is 16W bytes, K contiguous
            if k * elem_bytes > 16 * w:
                raise SimError(f"K-major {SWIZZLE_NAME[f['layout']]} rows hold "
                               f"{16 * w} bytes, the operand needs {k * elem_bytes}")
            off = (r % 8) * 16 * w + (r // 8) * sbo + c * elem_bytes
    else:
        if w == 1:    # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
            off = (r % t) * elem_bytes + (r // t) * sbo + (c % 8) * 16 + (c // 8) * lbo
        else:         # ((T,W,m),(8,k)):((1,T,LBO),(WT,SBO)): W*T rows contiguous
            off = (r % (w * t)) * elem_bytes + (r // (w * t)) * lbo + (c % 8) * 16 * w + \
                (c // 8) * sbo
    at = start + off
    if w > 1:
        at = at ^ (((at >> 7) & (w - 1)) << 4)
    return at


def operand(read, desc: int, rows: int, k: int, elem_bytes: int,
            mn_major: bool) -> np.ndarray:
    """The rows x k x elem_bytes raw bytes (uint8, little-endian elements) of the operand
    `desc` names; `read(offsets)` returns the shared bytes (uint8) at an integer array of
    window offsets, of its shape."""
    at = element_offsets(desc, rows, k, elem_bytes, mn_major)
    return np.asarray(read(at[..., None] + np.arange(elem_bytes)), np.uint8)


def values(raw: np.ndarray, fmt: str) -> np.ndarray:
    """16-bit raw operand bytes (rows, k, 2) as float64 (f16 or bf16)."""
    bits = raw[..., 0].astype(np.uint16) | (raw[..., 1].astype(np.uint16) << 8)
    if fmt == "f16":
        return bits.view(np.float16).astype(np.float64)
    if fmt == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    raise SimError(f"no 16-bit operand type {fmt}")


def make(start: int, layout: int, lbo: int = 16, sbo: int = 1024, base: int = 0) -> int:
    """A descriptor from byte quantities (for tests and tools)."""
    return ((start & (WINDOW - 1)) >> 4) | ((lbo & (WINDOW - 1)) >> 4) << 16 | \
        ((sbo & (WINDOW - 1)) >> 4) << 32 | (base & 7) << 49 | (layout & 3) << 62


def accumulators(prod: np.ndarray, lin: int) -> np.ndarray:
    """Thread `lin`'s f32 accumulators of the m64nN product `prod` (64 x N), in register
    order: register 4j + 2h + e of lane l of warp w (of the warpgroup) holds row
    16w + l/4 + 8h, column 8j + 2(l % 4) + e (cute's CLayout_64xN)."""
    i = np.arange(prod.shape[1] // 2)
    j, h, e = i // 4, (i // 2) % 2, i % 2
    w, lane = (lin % 128) // 32, lin % 32
    return prod[16 * w + lane // 4 + 8 * h, 8 * j + 2 * (lane % 4) + e]
