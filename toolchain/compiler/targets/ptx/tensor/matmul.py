"""tensor.matmul on PTX: one bounded output region per subgroup (gpu.md semantics).

For every row+r < M and column+c < N of the m x n region:
D[r,c] = C[r,c] + sum(q < K) A[r,q]*B[q,c]; out-of-range outputs are untouched, K == 0
copies C to D. Selection happens at run time with uniform predicates:
- native interior: the whole region is in range, the warp is complete, K >= one native
  chunk, every region origin is aligned for WMMA and each leading dimension is a multiple
  of 16 bytes. C is loaded once, all complete K chunks stay in the resident accumulators
  (wmma.run_grid's runtime loop), D is stored once; a K remainder then continues
  cooperatively from that stored D (warp-synchronised before and after);
- otherwise exact cooperative scalar replay (replay.py) from C over all of K.
A region whose accumulator tuple exceeds the tuple budget (--gpu-tensor-tuple-budget, or
TUPLE_BUDGET when 0) always replays, and so does every region on a profile without the
family's WMMA instruction (e.g. f64 or bf16 on the portable PTX 6.4 / compute_75 profile):
gpu.md's region semantics are exact replay where the native path is unavailable. The
descriptor is still checked against the same WMMA shape table, so a profile never accepts
a descriptor another refuses. Replay itself needs activemask (PTX 6.2, sm_70; E0504 below).
Families: f16/bf16 to f32, f64, i8/u8 to wrapping i32, subgroup scope; the others are
refused (E0504/E0505).
"""
from __future__ import annotations

from .. import ops as I
from .capabilities import ANY_PROFILE, refuse, select_wmma
from .common import Mat, add_addr, linear, mat, offset_terms, operands, scale_bytes
from .narrow import claims, lower_narrow_matmul
from .replay import Region, native_region_pred, native_then_replay, replaces_native
from .wmma import run_grid

TUPLE_BUDGET = 200                      # registers of resident fragments per lane
ALIGN = {"i8": 16, "u8": 16}            # WMMA origin alignment in bytes (default 32)
_FAMILIES = {("f16", "f32"), ("bf16", "f32"), ("f64", "f64"), ("i8", "i32"),
             ("u8", "i32")}


def _check_family(desc, profile, span) -> None:
    if desc.sparse or desc.scaled or desc.a_type in ("e4m3", "e5m2", "e2m3", "e3m2",
                                                     "e2m1"):
        raise refuse(desc, "sparse, FP8 and block-scaled tensor_matmul regions are not "
                     "implemented by this PTX backend yet", span)
    fam = desc.a_type
    if desc.a_type != desc.b_type:
        raise refuse(desc, "mixed A/B formats need matching WMMA inputs", span)
    if fam == "tf32":
        raise refuse(desc, "TF32 regions would need an inexact scalar TF32 tail", span)
    if (fam, desc.accumulator_type) not in _FAMILIES or \
            desc.accumulator_type != desc.result_type:
        raise refuse(desc, "tensor_matmul supports f16/bf16->f32, f64->f64 and "
                     "i8/u8->i32 (reduced-precision results are refused)", span)
    if desc.overflow != "wrap":
        raise refuse(desc, "saturating integer regions have no exact scalar tail", span)
    if desc.scope != "subgroup":
        raise refuse(desc, "tensor_matmul regions are subgroup-scoped", span)


def _budget(plan, budget: int) -> bool:
    """Whether the resident fragments fit `budget` registers per lane (0: TUPLE_BUDGET)."""
    gm, gn = plan.grid
    return gm * gn * plan.d_regs + min(gm, gn) * max(plan.a_regs, plan.b_regs) + \
        max(plan.a_regs, plan.b_regs) <= (budget or TUPLE_BUDGET)


def _origin(em, m: Mat, row, col) -> Mat:
    addr = add_addr(em, m.base, scale_bytes(em, linear(em, offset_terms(m, row, col)),
                                            m.bits))
    return Mat(addr, m.space, m.layout, m.ld, m.bits)


def _aligned(em, mats: list[Mat], align: int) -> str | None:
    """A predicate: every origin is `align`-byte aligned and every runtime leading
    dimension is a multiple of 16 bytes. None when a static ld already rules native out."""
    bad = em.new("rd")
    em.put(I.mov("u64", bad, 0))
    for m in mats:
        if isinstance(m.ld, int):
            if (m.ld * m.bits // 8) % 16:
                return None
        else:
            t = em.new("r")
            em.put(I.binary("mul.lo", "u32", t, m.ld, m.bits // 8),
                   I.binary("and", "b32", t, t, 15))
            w = em.new("rd")
            em.put(I.cvt("u64", "u32", w, t), I.binary("or", "b64", bad, bad, w))
        t = em.new("rd")
        em.put(I.binary("and", "b64", t, m.base, align - 1), I.binary("or", "b64", bad, bad, t))
    p = em.new("p")
    em.put(I.setp("eq", "u64", p, bad, 0))
    return p


def _native_pred(em, g: Region, plan, origins: list[Mat]) -> str | None:
    desc = g.desc
    aligned = _aligned(em, origins, ALIGN.get(desc.a_type, 32))
    if aligned is None:
        return None
    ok = em.new("p")
    em.put(I.mov("pred", ok, aligned))
    return native_region_pred(em, g, plan.shape[2], ok)


def lower_matmul(em, ins) -> None:
    desc, ops = ins.attrs["desc"], operands(ins)
    if claims(desc):                               # FP8, sparse, block-scaled: mma.sync
        lower_narrow_matmul(em, ins)
        return
    _check_family(desc, em.profile, ins.span)
    has_native = not replaces_native(desc, em.profile)
    plan = select_wmma(desc, em.profile if has_native else ANY_PROFILE, ins.span)
    em.profile.need("warp.sync", "exact cooperative tensor replay", ins.span)
    A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
    g = Region(desc, A, B, C, D, *(em.reg(ops[k]) for k in ("row", "column", "m", "n", "k")))
    native = origins = None
    if has_native and _budget(plan, em.tensor_tuple_budget):
        origins = [_origin(em, A, g.row, 0), _origin(em, B, 0, g.col),
                   _origin(em, C, g.row, g.col), _origin(em, D, g.row, g.col)]
        native = _native_pred(em, g, plan, origins)
    native_then_replay(em, g, "tmm", native, plan.shape[2],
                       lambda chunks: run_grid(em, plan, desc, *origins, chunks))
