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
the M (or N) row index; the box is 64 K-elements (128 bytes) by `rows` rows. Reads beyond
either extent are zero-filled by the copy engine and still count towards the transaction
bytes, which is what makes M/N/K tails exact without a separate tail path.
"""
from __future__ import annotations

ELEMTYPE = {"f16": 6, "bf16": 10}      # PTX tensormap.replace .elemtype codes
SWIZZLE_128B = 3
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


def build(em, slot: str, base: str, fmt: str, kdim: str, rows_dim: str, ld_bytes: str,
          box_rows: int, box_k: int) -> None:
    """Write one tensor map at global address `slot` (%rd) for the K-contiguous matrix at
    global address `base` (%rd): extents kdim x rows_dim (u32), row pitch ld_bytes (%rd)."""
    z = em.new("r")
    em.emit(f"mov.u32 {z}, 0")
    for off in range(0, MAP_BYTES, 16):
        em.emit(f"st.global.v4.b32 [{slot}+{off}], {{{z}, {z}, {z}, {z}}}")
    op = "tensormap.replace.tile"
    sfx = ".global.b1024"
    em.emit(f"{op}.global_address{sfx}.b64 [{slot}], {base}")
    em.emit(f"{op}.rank{sfx}.b32 [{slot}], {RANK_FIELD}")
    em.emit(f"{op}.box_dim{sfx}.b32 [{slot}], 0, {box_k}")
    em.emit(f"{op}.box_dim{sfx}.b32 [{slot}], 1, {box_rows}")
    em.emit(f"{op}.global_dim{sfx}.b32 [{slot}], 0, {kdim}")
    em.emit(f"{op}.global_dim{sfx}.b32 [{slot}], 1, {rows_dim}")
    if STRIDE_SHIFT:
        shifted = em.new("rd")
        em.emit(f"shr.u64 {shifted}, {ld_bytes}, {STRIDE_SHIFT}")
        ld_bytes = shifted
    em.emit(f"{op}.global_stride{sfx}.b64 [{slot}], 0, {ld_bytes}")
    em.emit(f"{op}.element_stride{sfx}.b32 [{slot}], 0, 1")
    em.emit(f"{op}.element_stride{sfx}.b32 [{slot}], 1, 1")
    em.emit(f"{op}.elemtype{sfx}.b32 [{slot}], {ELEMTYPE.get(fmt, fmt)}")
    em.emit(f"{op}.interleave_layout{sfx}.b32 [{slot}], 0")
    em.emit(f"{op}.swizzle_mode{sfx}.b32 [{slot}], {SWIZZLE_128B}")
    em.emit(f"{op}.fill_mode{sfx}.b32 [{slot}], 0")


def publish(em, slots: list[str]) -> None:
    """Order this thread's generic-proxy writes of the maps before its own tensor copies."""
    em.emit("fence.proxy.tensormap::generic.release.gpu")
    for s in slots:
        em.emit(f"fence.proxy.tensormap::generic.acquire.gpu [{s}], {MAP_BYTES}")


def load_2d(em, dst: str, tmap: str, k: str, row: str, bar: str) -> None:
    """Copy one box at coordinates (k, row) into shared `dst`, completing on `bar`."""
    em.emit(f"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            f" [{dst}], [{tmap}, {{{k}, {row}}}], [{bar}]")


def load_2d_multicast(em, dst: str, tmap: str, k: str, row: str, bar: str, mask: str) -> None:
    """load_2d into the same shared offset of every cluster workgroup in `mask` (u16),
    completing on the barrier at `bar`'s offset in each of them."""
    em.emit(f"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            f".multicast::cluster [{dst}], [{tmap}, {{{k}, {row}}}], [{bar}], {mask}")
