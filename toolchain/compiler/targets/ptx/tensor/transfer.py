"""tensor.transfer on PTX: one rank-1..5 tile between global and workgroup memory
(ir/transfer.py; gpu.md "Multidimensional tensor transfers").

Every form is entry- and exit-ordered by `bar.sync 0` (the whole workgroup reaches the
operation; after it the tile is published, or the stores are complete).

Replay (every profile): the work-items deal the tile's elements by linear id; element e
unravels to tile indices i_d (dimension 0 fastest), its global coordinates are
c_d + i_d * element_stride_d (64-bit signed), and its address base + sum c_d * stride_d.
A load writes zero for an element outside [0, extent_d) in any dimension; a store skips it.

Native TMA (PTX 8.3 / sm_90 and newer, with a `view` operand, on eligible geometry): the
view is a host-encoded CUtensorMap (tiled, no interleave, no swizzle, box = tile *
element_stride, the descriptor's element strides). At run time a null view, a view not
64-byte aligned or a workgroup address not 128-byte aligned falls back to the replay, and so
does a store whose box crosses the tensor's edge, and a load of rank 4 or 5 that does
(measured: illegal instructions on the H200 for such bulk copies; the replay zero-fills and
discards exactly). Load:
thread 0 acquires the map through the tensor-map proxy, initializes a compiler-owned
mbarrier, publishes the initialization to the async proxy, issues the tensor copy, arrives
expecting the tile's bytes, waits for the phase and invalidates the barrier. Store: every
work-item proxy-fences its own shared writes before the rendezvous, then thread 0 issues
one bulk group and waits for it. Out-of-bounds elements are zero-filled / discarded by the
copy engine, as in the replay.
"""
from __future__ import annotations

from .. import ops as I
from .common import label, operands

_BITS = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}
_CLASS = {1: "rs", 2: "rs", 4: "r", 8: "rd"}
MAX_BOX = 256
# Measured on the H200: bulk tensor loads whose box crosses the tensor's edge zero-fill
# correctly up to rank 3 (ranks 1-3 tested, negative coordinates included); a rank-5 load
# across the edge raised an illegal instruction (in-bounds rank 4 and 5 boxes are fine).
OOB_LOAD_MAX_RANK = 3


def native_eligible(desc) -> str | None:
    """Why this descriptor never takes the TMA path (None: it may)."""
    size = desc.element_bytes
    if desc.element_strides[0] != 1:
        return "a dimension-0 element stride"
    if not desc.loads and any(es != 1 for es in desc.element_strides):
        return "a strided store (the copy engine's element strides are qualified for loads)"
    if (desc.tiles[0] * size) % 16:
        return "an inner box that is not a multiple of 16 bytes"
    if any(t * es > MAX_BOX for t, es in zip(desc.tiles, desc.element_strides)):
        return f"a box dimension above {MAX_BOX}"
    if any(s % 16 for s in desc.strides[1:]):
        return "a global stride that is not a multiple of 16 bytes"
    if any(e >= 1 << 32 for e in desc.extents) or any(s >= 1 << 40 for s in desc.strides):
        return "a global extent or stride beyond the tensor-map limits"
    return None


def lower_transfer(em, ins) -> None:
    desc, ops = ins.attrs["desc"], operands(ins)
    coords = [em.reg(ops[f"coordinate{d}"]) for d in range(desc.rank)]
    wg = em.reg(ops["dst"] if desc.loads else ops["src"])
    gl = em.reg(ops["src"] if desc.loads else ops["dst"])
    why = native_eligible(desc) if "view" in ops else "no view operand"
    if why is None and not em.profile.has("fence.proxy.tensormap"):
        why = f"the {em.profile.target} profile has no tensor copy engine (sm_90, PTX 8.3)"
    em.put(I.bar_sync(0))
    if why is not None:
        em.put(I.comment(f"mtlc.tensor_transfer replay: {why}".strip()))
        _replay(em, desc, wg, gl, coords)
    else:
        view = em.reg(ops["view"])
        fallback, done = label(em, "ttx_replay"), label(em, "ttx_done")
        ok = _aligned(em, view, wg)
        if not desc.loads or desc.rank > OOB_LOAD_MAX_RANK:
            em.put(I.binary("and", "pred", ok, ok, _box_inside(em, desc, coords)))
        em.put(I.comment("mtlc.tensor_transfer native (TMA), replay when view/alignment fail"),
               I.bra(fallback, guard=ok, negated=True))
        (_tma_load if desc.loads else _tma_store)(em, desc, view, wg, coords)
        em.put(I.bra(done, uniform=True), I.label(fallback))
        _replay(em, desc, wg, gl, coords)
        em.put(I.label(done))
    em.put(I.bar_sync(0))


def _aligned(em, view: str, wg: str) -> str:
    """A predicate: the view is non-null and 64-byte aligned, the tile 128-byte aligned (the
    bulk tensor copy's shared operand; workgroup arrays of a function with a transfer are
    allocated so, lower_gpu.TMA_ALIGN)."""
    a, b, p, q = em.new("rd"), em.new("rd"), em.new("p"), em.new("p")
    em.put(I.binary("and", "b64", a, view, 63), I.binary("and", "b64", b, wg, 127),
           I.binary("or", "b64", a, a, b), I.setp("eq", "u64", p, a, 0),
           I.setp("ne", "u64", q, view, 0), I.binary("and", "pred", p, p, q))
    return p


def _box_inside(em, desc, coords: list[str]) -> str:
    """A predicate: the whole box lies inside the tensor. The H200 raised an illegal
    instruction for bulk tensor stores whose box crossed the tensor's edge, so a store takes
    the copy engine only when nothing needs discarding (the replay discards exactly)."""
    p = em.new("p")
    em.put(I.setp("eq", "u32", p, 0, 0))
    for d, c in enumerate(coords):
        w, q = em.new("rd"), em.new("p")
        em.put(I.cvt("s64", "s32", w, c), I.setp("ge", "s64", q, w, 0),
               I.binary("and", "pred", p, p, q),
               I.binary("add", "s64", w, w, desc.tiles[d] * desc.element_strides[d]),
               I.setp("le", "s64", q, w, desc.extents[d]), I.binary("and", "pred", p, p, q))
    return p


def _thread0(em) -> tuple[str, str]:
    """(predicate `linear thread id != 0`, skip label) around an elected-thread section."""
    r = {k: em.new("r") for k in ("x", "y", "z")}
    for k in "xyz":
        em.put(I.mov("u32", r[k], f"%tid.{k}"))
    em.put(I.binary("or", "b32", r["x"], r["x"], r["y"]),
           I.binary("or", "b32", r["x"], r["x"], r["z"]))
    p, skip = em.new("p"), label(em, "ttx_t0")
    em.put(I.setp("ne", "u32", p, r["x"], 0))
    return p, skip


def _shared32(em, wg: str) -> str:
    s = em.new("r")
    em.put(I.cvt("u32", "u64", s, wg))
    return s


def _tma_load(em, desc, view: str, wg: str, coords: list[str]) -> None:
    mbar = em.module.shared_array(em.fn, "ttx_mbar", 8, 8)
    bar, dst = em.new("r"), _shared32(em, wg)
    em.put(I.mov("u32", bar, mbar))
    p, skip = _thread0(em)
    em.put(I.bra(skip, guard=p), I.fence_proxy_tensormap_acquire(view, 128),
           I.mbarrier_init(bar, 1), I.fence_mbarrier_init(), I.fence_proxy_async_shared(),
           I.cp_async_bulk_tensor_load(dst, view, coords, bar),
           I.mbarrier_arrive_expect_tx(bar, desc.tile_bytes))
    top, done = label(em, "ttx_wait"), em.new("p")
    em.put(I.label(top), I.mbarrier_try_wait_parity(done, bar, 0),
           I.bra(top, guard=done, negated=True), I.mbarrier_inval(bar), I.label(skip))


def _tma_store(em, desc, view: str, wg: str, coords: list[str]) -> None:
    src = _shared32(em, wg)
    em.put(I.fence_proxy_async_shared(),            # this work-item's shared writes
           I.bar_sync(0))
    p, skip = _thread0(em)
    em.put(I.bra(skip, guard=p), I.fence_proxy_tensormap_acquire(view, 128),
           I.cp_async_bulk_tensor_store(view, coords, src), I.cp_async_bulk_commit_group(),
           I.cp_async_bulk_wait_group(0), I.label(skip))


def _replay(em, desc, wg: str, gl: str, coords: list[str]) -> None:
    size = desc.element_bytes
    r = {k: em.new("r") for k in ("tx", "ty", "tz", "nx", "ny", "nz", "e", "n")}
    for k, sreg in (("tx", "%tid.x"), ("ty", "%tid.y"), ("tz", "%tid.z"),
                    ("nx", "%ntid.x"), ("ny", "%ntid.y"), ("nz", "%ntid.z")):
        em.put(I.mov("u32", r[k], sreg))
    em.put(I.mad("lo", "u32", r["e"], r["tz"], r["ny"], r["ty"]),
           I.mad("lo", "u32", r["e"], r["e"], r["nx"], r["tx"]),
           I.binary("mul.lo", "u32", r["n"], r["nx"], r["ny"]),
           I.binary("mul.lo", "u32", r["n"], r["n"], r["nz"]))
    wide = []
    for c in coords:                                 # signed coordinates, widened once
        w = em.new("rd")
        em.put(I.cvt("s64", "s32", w, c))
        wide.append(w)
    top, end, skip = label(em, "ttx_e"), label(em, "ttx_end"), label(em, "ttx_oob")
    done = em.new("p")
    em.put(I.label(top), I.setp("ge", "u32", done, r["e"], desc.tile_elements),
           I.bra(end, guard=done))
    rest, inb, goff = em.new("r"), em.new("p"), em.new("rd")
    em.put(I.mov("u32", rest, r["e"]),
           I.setp("eq", "u32", inb, rest, rest),    # true
           I.mov("u64", goff, 0))
    for d in range(desc.rank):
        i, g, p = em.new("r"), em.new("rd"), em.new("p")
        em.put(I.binary("rem", "u32", i, rest, desc.tiles[d]),
               I.binary("div", "u32", rest, rest, desc.tiles[d]),
               I.binary("mul.wide", "u32", g, i, desc.element_strides[d]),
               I.binary("add", "s64", g, g, wide[d]),
               I.setp("lt", "u64", p, g, desc.extents[d]),      # 0 <= g < extent
               I.binary("and", "pred", inb, inb, p),
               I.mad("lo", "s64", goff, g, desc.strides[d], goff))
    gaddr, saddr = em.new("rd"), em.new("rd")
    em.put(I.binary("add", "s64", gaddr, gl, goff),
           I.binary("mul.wide", "u32", saddr, r["e"], size),
           I.binary("add", "s64", saddr, wg, saddr))
    v, bits = em.new(_CLASS[size]), _BITS[size]
    ld_bits = "u8" if size == 1 else bits
    if desc.loads:
        em.put(I.mov("b16" if size == 1 else bits, v, 0),
               I.ld(".global", ld_bits, v, I.mem(gaddr), guard=inb),
               I.st(".shared", ld_bits, I.mem(saddr), v))
    else:
        em.put(I.bra(skip, guard=inb, negated=True),
               I.ld(".shared", ld_bits, v, I.mem(saddr)),
               I.st(".global", ld_bits, I.mem(gaddr), v), I.label(skip))
    em.put(I.binary("add", "u32", r["e"], r["e"], r["n"]), I.bra(top, uniform=True),
           I.label(end))
