"""TMA (bulk tensor copy) helpers of the sm_90a workgroup GEMM (wgmma.py).

Tensor maps are built on the device (docs/reference/gemm.md "Where the tensor map comes from"): one
thread zero-fills a 128-byte, 128-byte-aligned slot of a module-scope `.global` workspace,
sets every field the copy engine reads with `tensormap.replace` (address, rank, box, global
extents, byte stride, element strides, element type, no interleave, 128-byte swizzle, zero
fill), then releases it to the tensor-map proxy and acquires it before its first copy.
Kernel parameters therefore stay exactly the source's, and `dispatch` needs no extra
encoding step. A slot is per multiprocessor (`%smid`): a workgroup that runs this path
occupies more than half of the multiprocessor's shared memory, so no two such workgroups
are resident on one multiprocessor at a time.

Maps are rank 2 over a K-contiguous operand: dimension 0 is K (contiguous), dimension 1 is
the M (or N) row index; the box is 128 bytes of K (64 f16/bf16 or 128 FP8 elements,
mapped as u8) by `rows` rows. Reads beyond either extent are zero-filled by the copy engine
and still count towards the transaction bytes, which is what makes M/N/K tails exact
without a separate tail path.
"""
from __future__ import annotations

from .. import ops

ELEMTYPE = {"u8": 0, "f16": 6, "f32": 7, "bf16": 10}   # PTX tensormap.replace .elemtype codes
SWIZZLE = {128: 3, 64: 2, 32: 1}        # .swizzle_mode codes per swizzle row bytes
RANK_FIELD = 1                         # .rank takes rank - 1
STRIDE_SHIFT = 0                       # .global_stride takes bytes >> STRIDE_SHIFT
SLOTS = 256                            # %smid values served (checked at run time)
MAP_BYTES = 128


def workspace(em, maps: int) -> str:
    """A module-scope .global workspace of SLOTS * maps tensor maps; returns its symbol."""
    mod = em.module
    name = mod._fresh(f"{em.fn.name}_tmaps")
    mod.globals_out.append(f".global .align {MAP_BYTES} .b8 {name}[{SLOTS * maps * MAP_BYTES}];")
    return name


def _clear(em, slot: str) -> None:
    """Zero the 128 bytes of the map at global address `slot`: fields never replaced."""
    z = em.new("r")
    em.put(ops.mov("u32", z, 0))
    for off in range(0, MAP_BYTES, 16):
        em.put(ops.st_vec(".global", "b32", ops.mem(slot, off), ops.vec(z, z, z, z)))


def build(em, slot: str, base: str, fmt: str, kdim: str, rows_dim: str, ld_bytes: str,
          box_rows: int, box_k: int, swizzle: int = 128) -> None:
    """Write one tensor map at global address `slot` (%rd) for the K-contiguous matrix at
    global address `base` (%rd): extents kdim x rows_dim (u32), row pitch ld_bytes (%rd),
    `swizzle`-byte swizzle rows (a box row of K is that many bytes)."""
    _clear(em, slot)
    rep = ops.tensormap_replace
    em.put(rep("global_address", slot, base), rep("rank", slot, RANK_FIELD),
           rep("box_dim", slot, 0, box_k), rep("box_dim", slot, 1, box_rows),
           rep("global_dim", slot, 0, kdim), rep("global_dim", slot, 1, rows_dim))
    if STRIDE_SHIFT:
        shifted = em.new("rd")
        em.put(ops.binary("shr", "u64", shifted, ld_bytes, STRIDE_SHIFT))
        ld_bytes = shifted
    em.put(rep("global_stride", slot, 0, ld_bytes), rep("element_stride", slot, 0, 1),
           rep("element_stride", slot, 1, 1), rep("elemtype", slot, ELEMTYPE.get(fmt, fmt)),
           rep("interleave_layout", slot, 0), rep("swizzle_mode", slot, SWIZZLE[swizzle]),
           rep("fill_mode", slot, 0))


def build_tiled_rows(em, slot: str, base: str, fmt: str, width: int, tiles: str, rows: str,
                     tile_bytes: int, ld_bytes: str, box_rows: int, box_cols: int) -> None:
    """Write a rank-3 map of a row-major matrix seen as tiles of `width` columns: dimension
    0 the `width` columns of a tile (contiguous), 1 the tile (`tile_bytes` apart, `tiles`
    of them), 2 the row (`ld_bytes` apart, `rows`); boxes of box_cols x 1 x box_rows. A box
    that reaches past a tile's `width` columns is clipped there by the copy engine, which
    is what lets a tile whose width holds no whole number of boxes store its last box
    without touching its neighbour's columns. The box's shared layout is the rank-2
    one's (a dimension of box size 1 adds nothing)."""
    _clear(em, slot)
    rep = ops.tensormap_replace
    em.put(rep("global_address", slot, base), rep("rank", slot, RANK_FIELD + 1),
           rep("box_dim", slot, 0, box_cols), rep("box_dim", slot, 1, 1),
           rep("box_dim", slot, 2, box_rows), rep("global_dim", slot, 0, width),
           rep("global_dim", slot, 1, tiles), rep("global_dim", slot, 2, rows))
    assert not STRIDE_SHIFT and tile_bytes % 16 == 0
    stride = em.new("rd")
    em.put(ops.mov("u64", stride, tile_bytes),
           rep("global_stride", slot, 0, stride), rep("global_stride", slot, 1, ld_bytes),
           *(rep("element_stride", slot, i, 1) for i in range(3)),
           rep("elemtype", slot, ELEMTYPE.get(fmt, fmt)), rep("interleave_layout", slot, 0),
           rep("swizzle_mode", slot, SWIZZLE[128]), rep("fill_mode", slot, 0))


def publish(em, slots: list[str]) -> None:
    """Order this thread's generic-proxy writes of the maps before its own tensor copies."""
    em.put(ops.fence_proxy_tensormap_release())
    for s in slots:
        em.put(ops.fence_proxy_tensormap_acquire(s, MAP_BYTES))


def load_2d(em, dst: str, tmap: str, k: str, row: str, bar: str) -> None:
    """Copy one box at coordinates (k, row) into shared `dst`, completing on `bar`."""
    em.put(ops.cp_async_bulk_tensor_2d(dst, tmap, k, row, bar))


def load_2d_multicast(em, dst: str, tmap: str, k: str, row: str, bar: str, mask: str) -> None:
    """load_2d into the same shared offset of every cluster workgroup in `mask` (u16),
    completing on the barrier at `bar`'s offset in each of them."""
    em.put(ops.cp_async_bulk_tensor_2d(dst, tmap, k, row, bar, multicast_mask=mask))
