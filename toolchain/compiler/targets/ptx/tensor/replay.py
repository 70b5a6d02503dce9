"""Exact cooperative scalar replay of a tensor.matmul region (gpu.md: partial M/N, K tails,
K below one native chunk, partial warps, misaligned origins, tuple-budget refusals).

The region's m*n output elements are dealt round-robin to the live lanes (rank among
`activemask`, so any partial warp covers every element exactly once). Each lane computes
D[r,c] = init + sum(q = q0 .. K-1) A[r,q]*B[q,c] sequentially in q order with the
family's arithmetic: f32 `fma.rn` for f16/bf16/E4M3/E5M2 (exactly widened), f64 `fma` in the
descriptor's rounding (rn by default, the same as the native f64 WMMA), and wrapping
`mad.lo.s32` for i8/u8. `init` is C[r,c] (a whole replay) or the D value the
native interior already stored (a K tail). Out-of-range coordinates (row+r >= M or
col+c >= N, compared in 64 bits) are skipped, so they are never read or written. Every
address is built in 64 bits (common.elem_addr).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as I
from .capabilities import F64_ROUNDING
from .common import Mat, elem_addr, label, linear, live_lanes, offset_terms, scale_bytes
from .fp8 import FP8, load_decoded

COMPUTE = {"f16": "f", "bf16": "f", "f32": "f", "f64": "fd", "i8": "r", "u8": "r",
           "i32": "r"}
# (A/B format, accumulator = result) pairs replay computes exactly (module docstring)
EXACT = {("f16", "f32"), ("bf16", "f32"), ("f64", "f64"), ("i8", "i32"), ("u8", "i32")}


def replaces_native(desc, profile) -> bool:
    """Whether `desc` is a WMMA or unscaled FP8 family this profile lacks but replay
    computes exactly: such operations replay instead of being refused (gpu.md: exact replay
    where the native path is unavailable)."""
    fam = desc.a_type
    plain = desc.accumulator_type == desc.result_type and desc.overflow == "wrap" and \
        not desc.sparse and not desc.scaled and desc.math == "multiply_add"
    if fam in FP8 and desc.b_type in FP8:
        return plain and desc.accumulator_type == "f32" and desc.rounding == "default" \
            and not profile.has("mma.fp8.k32")
    return plain and fam == desc.b_type and (fam, desc.accumulator_type) in EXACT and \
        not profile.has(f"wmma.{fam}")


@dataclass
class Region:
    desc: object
    A: Mat
    B: Mat
    C: Mat
    D: Mat
    row: str
    col: str
    M: str
    N: str
    K: str
    W: str | None = None             # tensor_matmul's `workspace:` (u64), or None
    kc: tuple | None = None          # a tile loop's K chunks [first, end) (None: all)
    unit: str | None = None          # a tile loop's unit counter (stream-K's fixup)


def native_region_pred(em, g: Region, k: int, ok: str | None = None,
                       whole_warp: bool = True) -> str:
    """The uniform predicate for a native interior: K holds at least one `k` chunk, the region
    lies wholly in range (64-bit compares) and (`whole_warp`) the subgroup is a complete
    warp. ANDed into the predicate `ok` when one is given."""
    if ok is None:
        ok = em.new("p")
        em.put(I.setp("ge", "u32", ok, g.K, k))
    else:
        em.put(I.setp_and("ge", "u32", ok, g.K, k, ok))
    for base, size, bound in ((g.row, g.desc.m, g.M), (g.col, g.desc.n, g.N)):
        end, lim = em.new("rd"), em.new("rd")
        em.put(I.cvt("u64", "u32", end, base), I.binary("add", "s64", end, end, size),
               I.cvt("u64", "u32", lim, bound), I.setp_and("le", "u64", ok, end, lim, ok))
    if not whole_warp:
        return ok
    mask = em.new("r")
    em.put(I.activemask(mask), I.setp_and("eq", "u32", ok, mask, "0xFFFFFFFF", ok))
    return ok


def native_then_replay(em, g: Region, tag: str, pred: str | None, k: int, native,
                       k_loop=None) -> None:
    """The region skeleton every tensor_matmul family shares. Where the uniform predicate
    `pred` holds, `native(chunks)` runs floor(K/k) native chunks and stores D, and a K tail
    is replayed on top of that D; otherwise (or with no `pred`) the whole region replays
    exactly. The exit is ordered for the whole subgroup."""
    end, slow = label(em, f"{tag}_end"), label(em, f"{tag}_replay")
    if pred is not None:
        em.put(I.bra(slow, guard=pred, negated=True, uniform=True))
        chunks, kfull, tail = em.new("r"), em.new("r"), em.new("p")
        em.put(I.binary("div", "u32", chunks, g.K, k))
        native(chunks)
        em.put(I.binary("mul.lo", "u32", kfull, chunks, k),
               I.setp("ge", "u32", tail, kfull, g.K),
               I.bra(end, guard=tail, uniform=True),
               I.bar_warp_sync(-1))                # the stored D is what the tail extends
        replay(em, g, kfull, init_from_d=True, k_loop=k_loop)
        em.put(I.bra(end, uniform=True))
    em.put(I.label(slow))
    replay(em, g, 0, init_from_d=False, k_loop=k_loop)
    em.put(I.label(end))
    mask = em.new("r")
    em.put(I.activemask(mask),
           I.bar_warp_sync(mask))                  # exit-ordered for the whole subgroup


def replay_tile(em, desc, A: Mat, B: Mat, C: Mat, D: Mat, span, make_k_loop=None) -> None:
    """A whole tensor.mma tile by exact replay: the region at the origin with M, N, K the
    tile's m, n, k (used where the profile lacks the native family). `make_k_loop(region)`
    gives a family's own K loop (structured sparsity, block scaling)."""
    em.profile.need("warp.sync", "exact cooperative tensor replay", span)
    regs = []
    for v in (0, 0, desc.m, desc.n, desc.k):
        r = em.new("r")
        em.put(I.mov("u32", r, v))
        regs.append(r)
    g = Region(desc, A, B, C, D, *regs)
    native_then_replay(em, g, "tmma", None, desc.k, None,
                       make_k_loop(g) if make_k_loop else None)


def load_value(em, fmt: str, m: Mat, addr: str) -> str:
    """Load one element and widen it exactly to the replay's compute register."""
    if fmt in FP8:
        return load_decoded(em, fmt, m.space, addr)
    if fmt in ("f16", "bf16"):
        h, out = em.new("rs"), em.new("f")
        em.put(I.ld(m.space, "b16", h, I.mem(addr)))
        if fmt == "f16":
            em.put(I.cvt("f32", "f16", out, h))
        else:
            w = em.new("r")
            em.put(I.cvt("u32", "u16", w, h), I.binary("shl", "b32", w, w, 16),
                   I.mov("b32", out, w))
        return out
    kind = {"f32": ("f", "f32"), "f64": ("fd", "f64"), "i8": ("r", "s8"),
            "u8": ("r", "u8"), "i32": ("r", "s32")}[fmt]
    out = em.new(kind[0])
    em.put(I.ld(m.space, kind[1], out, I.mem(addr)))
    return out


def store_value(em, fmt: str, m: Mat, addr: str, value: str) -> None:
    if fmt in ("f16", "bf16"):               # an f32 result rounded once (workgroup regions)
        h = em.new("rs")
        if fmt == "f16" or em.profile.has("cvt.bf16"):
            em.put(I.cvt(fmt, "f32", h, value, rounding="rn"))
        else:
            _bf16_rne(em, h, value)
        em.put(I.st(m.space, "b16", I.mem(addr), h))
        return
    em.put(I.st(m.space, {"f32": "f32", "f64": "f64", "i32": "s32"}[fmt], I.mem(addr), value))


def _bf16_rne(em, h: str, value: str) -> None:
    """cvt.rn.bf16.f32 before sm_80: round the f32 bits to nearest-even on bit 16; a NaN
    keeps its sign and top payload bits, made quiet."""
    b, t, nan = em.new("r"), em.new("r"), em.new("p")
    em.put(I.mov("b32", b, value), I.setp("nan", "f32", nan, value, value),
           I.binary("shr", "u32", t, b, 16), I.binary("and", "b32", t, t, 1),
           I.binary("add", "u32", t, t, 32767), I.binary("add", "u32", t, b, t),
           I.guarded(I.binary("or", "b32", t, b, 4194304), nan),
           I.binary("shr", "u32", t, t, 16), I.cvt("u16", "u32", h, t))


def fma(em, fmt: str, acc: str, a: str, b: str, rounding: str = "default") -> None:
    if COMPUTE[fmt] == "r":
        em.put(I.mad("lo", "s32", acc, a, b, acc))
    elif COMPUTE[fmt] == "fd":
        em.put(I.fma("f64", acc, a, b, acc, F64_ROUNDING[rounding]))
    else:
        em.put(I.fma("f32", acc, a, b, acc))


def _coords(em, g: Region, e: str) -> tuple[str, str, str]:
    """(global row, global column, in-range predicate) of local element `e`."""
    n = g.desc.n
    r, c = em.new("r"), em.new("r")
    em.put(I.binary("div", "u32", r, e, n), I.binary("rem", "u32", c, e, n))
    ok = em.new("p")
    inr = []
    for base, local, bound in ((g.row, r, g.M), (g.col, c, g.N)):
        w, lim = em.new("rd"), em.new("rd")
        em.put(I.cvt("u64", "u32", w, base), I.cvt("u64", "u32", lim, bound))
        loc = em.new("rd")
        em.put(I.cvt("u64", "u32", loc, local), I.binary("add", "s64", w, w, loc))
        p = em.new("p")
        em.put(I.setp("lt", "u64", p, w, lim))
        inr.append(p)
    em.put(I.binary("and", "pred", ok, inr[0], inr[1]))
    gr, gc = em.new("r"), em.new("r")
    em.put(I.binary("add", "u32", gr, g.row, r), I.binary("add", "u32", gc, g.col, c))
    return gr, gc, ok


def replay(em, g: Region, q0: int | str, init_from_d: bool, k_loop=None) -> None:
    """Emit the whole cooperative replay loop (see the module docstring). `k_loop`
    replaces the dense K loop (structured sparsity walks its masks instead)."""
    desc = g.desc
    _, rank, count = live_lanes(em)
    e, p = em.new("r"), em.new("p")
    em.put(I.mov("u32", e, rank))
    top, nxt, end = label(em, "trp_e"), label(em, "trp_next"), label(em, "trp_end")
    em.put(I.label(top), I.setp("ge", "u32", p, e, desc.m * desc.n), I.bra(end, guard=p))
    gr, gc, ok = _coords(em, g, e)
    em.put(I.bra(nxt, guard=ok, negated=True))
    init = g.D if init_from_d else g.C
    init_fmt = desc.result_type if init_from_d else desc.accumulator_type
    acc = load_value(em, init_fmt, init, elem_addr(em, init, gr, gc))
    (k_loop or _k_loop)(em, g, gr, gc, q0, acc)
    store_value(em, desc.result_type, g.D, elem_addr(em, g.D, gr, gc), acc)
    em.put(I.label(nxt), I.binary("add", "u32", e, e, count), I.bra(top, uniform=True),
           I.label(end))


def _k_loop(em, g: Region, gr: str, gc: str, q0: int | str, acc: str) -> None:
    desc = g.desc
    q, p = em.new("r"), em.new("p")
    em.put(I.mov("u32", q, q0))
    pa, pb = em.new("rd"), em.new("rd")
    em.put(I.mov("u64", pa, elem_addr(em, g.A, gr, q)))
    em.put(I.mov("u64", pb, elem_addr(em, g.B, q, gc)))
    sa = scale_bytes(em, linear(em, offset_terms(g.A, 0, 1)), g.A.bits)
    sb = scale_bytes(em, linear(em, offset_terms(g.B, 1, 0)), g.B.bits)
    top, end = label(em, "trp_k"), label(em, "trp_kend")
    em.put(I.label(top), I.setp("ge", "u32", p, q, g.K), I.bra(end, guard=p))
    va = load_value(em, desc.a_type, g.A, pa)
    vb = load_value(em, desc.b_type, g.B, pb)
    fma(em, desc.accumulator_type, acc, va, vb, desc.rounding)
    em.put(I.binary("add", "s64", pa, pa, sa), I.binary("add", "s64", pb, pb, sb),
           I.binary("add", "u32", q, q, 1), I.bra(top), I.label(end))
