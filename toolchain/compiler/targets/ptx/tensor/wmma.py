"""Stable WMMA load/MMA/store sequences for one logical tile (a grid of physical tiles).

`run_grid` computes D = A*B + C over a logical tile of `plan.grid` physical tiles:
C is loaded once into resident accumulators, every K chunk loads each needed A and B
fragment exactly once (the smaller side is held for the whole chunk and the other side is
streamed, so every fragment is reused across the grid), and D is stored once. The chunk
count is a Python int (a whole tensor_mma tile, unrolled) or a u32 register (a
tensor_matmul interior: a runtime loop whose A/B pointers advance one chunk per trip).
Fragment registers and WMMA spellings never leave this file.
"""
from __future__ import annotations

from .. import ops as I
from .capabilities import F64_ROUNDING, PTX_TYPE, WmmaPlan
from .common import Mat, add_addr, label, linear, offset_terms, scale_bytes


def _cls(fmt: str) -> str:
    return {"f32": "f", "f64": "fd"}.get(fmt, "r")


def _regs(em, fmt: str, n: int) -> list[str]:
    return [em.new(_cls(fmt)) for _ in range(n)]


def _tuple(regs: list[str]) -> str:
    return "{" + ", ".join(regs) + "}"


def _ld(m: Mat) -> str:
    return str(m.ld)


def load_frag(em, plan: WmmaPlan, which: str, m: Mat, addr: str, fmt: str,
              regs: list[str] | None = None) -> list[str]:
    n = {"a": plan.a_regs, "b": plan.b_regs, "c": plan.c_regs}[which]
    regs = regs or _regs(em, "f64" if fmt == "f64" else ("f32" if which == "c" and
                                                           fmt == "f32" else "r"), n)
    em.put(I.wmma_load(which, m.layout, plan.shape_name, m.space, PTX_TYPE[fmt], regs, addr,
                       _ld(m)))
    return regs


def store_frag(em, plan: WmmaPlan, m: Mat, addr: str, fmt: str, regs: list[str]) -> None:
    em.put(I.wmma_store(m.layout, plan.shape_name, m.space, PTX_TYPE[fmt], addr, regs,
                        _ld(m)))


def mma(em, plan: WmmaPlan, desc, d: list[str], a: list[str], b: list[str], c: list[str],
        c_fmt: str, d_fmt: str) -> None:
    em.put(I.wmma_mma(plan.family, desc.stored_layout("a"), desc.stored_layout("b"),
                      plan.shape_name, d, a, b, c, d_type=d_fmt, c_type=c_fmt,
                      rounding=F64_ROUNDING[desc.rounding] if plan.family == "f64" else "rn",
                      popc="xor" if desc.math == "xor_popcount" else "and",
                      a_type=PTX_TYPE.get(desc.a_type, ""), b_type=PTX_TYPE.get(desc.b_type, ""),
                      satfinite=desc.overflow == "saturate_finite"))


def _sub_addrs(em, m: Mat, coords: list[tuple[int, int]]) -> list[str]:
    return [add_addr(em, m.base, scale_bytes(em, linear(em, offset_terms(m, r, c)), m.bits))
            for r, c in coords]


def _chunk(em, plan, desc, A: Mat, B: Mat, a_addrs, b_addrs, acc, fmts) -> None:
    """One K chunk over the whole grid; `fmts` = (c format of this update, d format)."""
    gm, gn = plan.grid
    if gm <= gn:
        held = [load_frag(em, plan, "a", A, a, desc.a_type) for a in a_addrs]
        for j, b_addr in enumerate(b_addrs):
            bf = load_frag(em, plan, "b", B, b_addr, desc.b_type)
            for i in range(gm):
                mma(em, plan, desc, acc[i][j], held[i], bf, acc[i][j], *fmts)
    else:
        held = [load_frag(em, plan, "b", B, b, desc.b_type) for b in b_addrs]
        for i, a_addr in enumerate(a_addrs):
            af = load_frag(em, plan, "a", A, a_addr, desc.a_type)
            for j in range(gn):
                mma(em, plan, desc, acc[i][j], af, held[j], acc[i][j], *fmts)


def _advance(em, bases: list[str], step) -> list[str]:
    return [add_addr(em, b, step) for b in bases]


def run_grid(em, plan: WmmaPlan, desc, A: Mat, B: Mat, C: Mat, D: Mat,
             chunks: int | str) -> None:
    """D = A*B + C over the logical tile whose (0, 0) elements are the Mat bases."""
    gm, gn = plan.grid
    pm, pn, pk = plan.shape
    c_addrs = _sub_addrs(em, C, [(i * pm, j * pn) for i in range(gm) for j in range(gn)])
    acc_fmt, res_fmt = desc.accumulator_type, desc.result_type
    acc = [[None] * gn for _ in range(gm)]
    for i in range(gm):
        for j in range(gn):
            acc[i][j] = load_frag(em, plan, "c", C, c_addrs[i * gn + j], acc_fmt)
    a_step = scale_bytes(em, linear(em, offset_terms(A, 0, pk)), A.bits)
    b_step = scale_bytes(em, linear(em, offset_terms(B, pk, 0)), B.bits)
    if isinstance(chunks, int):
        _static_chunks(em, plan, desc, A, B, acc, chunks, a_step, b_step)
    else:
        _runtime_chunks(em, plan, desc, A, B, acc, chunks, a_step, b_step)
    d_addrs = _sub_addrs(em, D, [(i * pm, j * pn) for i in range(gm) for j in range(gn)])
    for i in range(gm):
        for j in range(gn):
            store_frag(em, plan, D, d_addrs[i * gn + j], res_fmt, acc[i][j])


def run_grid_on(em, plan: WmmaPlan, desc, A: Mat, B: Mat, acc, chunks: int) -> None:
    """acc += A*B over the logical tile: the K chunks of run_grid without loading C or
    storing D, for accumulators kept resident across operations (resident.py)."""
    pk = plan.shape[2]
    a_step = scale_bytes(em, linear(em, offset_terms(A, 0, pk)), A.bits)
    b_step = scale_bytes(em, linear(em, offset_terms(B, pk, 0)), B.bits)
    _static_chunks(em, plan, desc, A, B, acc, chunks, a_step, b_step)


sub_addrs = _sub_addrs


def _retype(em, acc, plan, desc) -> list[list[list[str]]]:
    """Fresh result-format tuples when C's format differs from D's (f16 C, f32 D)."""
    return [[_regs(em, desc.result_type, plan.d_regs) for _ in row] for row in acc]


def _static_chunks(em, plan, desc, A, B, acc, chunks, a_step, b_step) -> None:
    gm, gn = plan.grid
    pm, pn, _ = plan.shape
    a_addrs = _sub_addrs(em, A, [(i * pm, 0) for i in range(gm)])
    b_addrs = _sub_addrs(em, B, [(0, j * pn) for j in range(gn)])
    c_fmt = desc.accumulator_type
    for kk in range(chunks):
        if kk:
            a_addrs, b_addrs = _advance(em, a_addrs, a_step), _advance(em, b_addrs, b_step)
        if c_fmt != desc.result_type:
            new = _retype(em, acc, plan, desc)
            _chunk_into(em, plan, desc, A, B, a_addrs, b_addrs, acc, new, c_fmt)
            for i in range(gm):
                acc[i] = new[i]
            c_fmt = desc.result_type
        else:
            _chunk(em, plan, desc, A, B, a_addrs, b_addrs, acc, (c_fmt, desc.result_type))


def _chunk_into(em, plan, desc, A, B, a_addrs, b_addrs, src, dst, c_fmt) -> None:
    """A chunk whose accumulator changes format (first f16-C update of an f32-D tile)."""
    gm, gn = plan.grid
    held = [load_frag(em, plan, "a", A, a, desc.a_type) for a in a_addrs]
    for j, b_addr in enumerate(b_addrs):
        bf = load_frag(em, plan, "b", B, b_addr, desc.b_type)
        for i in range(gm):
            mma(em, plan, desc, dst[i][j], held[i], bf, src[i][j], c_fmt, desc.result_type)


def _runtime_chunks(em, plan, desc, A, B, acc, chunks: str, a_step, b_step) -> None:
    """A runtime loop of `chunks` (>= 1) K chunks; accumulator format is uniform here."""
    gm, gn = plan.grid
    pm, pn, _ = plan.shape
    a_addrs = _sub_addrs(em, A, [(i * pm, 0) for i in range(gm)])
    b_addrs = _sub_addrs(em, B, [(0, j * pn) for j in range(gn)])
    pa, pb = [em.new("rd") for _ in a_addrs], [em.new("rd") for _ in b_addrs]
    for r, src in (*zip(pa, a_addrs), *zip(pb, b_addrs)):
        em.put(I.mov("u64", r, src))
    count, done = em.new("r"), em.new("p")
    em.put(I.mov("u32", count, chunks))
    top = label(em, "tmm_k")
    em.put(I.label(top))
    fmts = (desc.accumulator_type, desc.result_type)
    _chunk(em, plan, desc, A, B, pa, pb, acc, fmts)
    for r in pa:
        em.put(I.binary("add", "s64", r, r, a_step))
    for r in pb:
        em.put(I.binary("add", "s64", r, r, b_step))
    em.put(I.binary("sub", "u32", count, count, 1), I.setp("ne", "u32", done, count, 0),
           I.bra(top, guard=done, uniform=True))
