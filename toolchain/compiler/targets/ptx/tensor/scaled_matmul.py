"""Block-scaled FP8/FP6/FP4 tensor_matmul regions on PTX 8.8 sm_120a/sm_121a (gpu.md
"Scaled regions use the same neutral scale contract as tensor_mma").

Families are scaled.py's (mxf8f6f4: any E4M3/E5M2/E2M3/E3M2/E2M1 pair with UE8M0 block32;
MXFP4: E2M1 with UE8M0 block32; NVFP4: E2M1 with UE4M3 block16), f32 accumulate/result,
subgroup scope; anything else is E0505. The native interior needs scaled.py's target gate
(PTX 8.8, sm_120a/sm_121a); every other profile with the replay's activemask (PTX 6.2 /
sm_70, else E0504) runs the exact replay alone, which uses integer decoding only (gpu.md:
exact replay where the native path is unavailable).

Semantics are matmul.py's: for every in-range output (row+r < M, column+c < N, compared in
64 bits) D[r,c] = C[r,c] + sum(q < K) (A[r,q]*sA[r,q/block]) * (B[q,c]*sB[q/block,c]),
accumulated with one f32 `fma.rn` per q in K order; out-of-range outputs are never read or
written, K == 0 copies C to D.

Every region runs the exact cooperative replay (replay.py) with the K loop below: per q
the lane gathers A's and B's code from the LSB-first dense stream by 64-bit element index
(logical strides include padding; an FP6 value may straddle two bytes, and nothing past a
value's last byte is read), decodes it to f32 with integer arithmetic only (no narrow
conversion instruction: PTX 8.8 does not qualify the alternate formats for sm_121a),
multiplies it by its block scale (exact: a power of two for UE8M0, a <= 4-bit significand
product for UE4M3) and FMAs. Scales are reloaded only when q enters a new block; scale_A is
row-major [M, ceil(K/block)] (ldsa), scale_B column-major [ceil(K/block), N] (ldsb), both
indexed by the logical (untransposed) coordinates; an absent ld defaults to the packed
ceil(K/block) computed from runtime K.

Native interior (scaled.run_scaled, the tensor_mma tile machinery in a runtime chunk loop):
when the region shape is an exact m16n8 grid within MAX_ACC_REGS and desc.k is a multiple
of the family's K (32 mxf8f6f4, 64 MXFP4/NVFP4), a uniform guard (region wholly in range,
complete warp, K >= one chunk) keeps the accumulators resident over all complete chunks,
advancing A/B element indices and both scale grids per chunk, and stores D once; the K
remainder then continues by replay from that stored D (chunks are whole scale blocks, so
the remainder starts on a block boundary). Fragments are gathered per element, so no
origin/stride alignment is needed. Everything else replays from C.
"""
from __future__ import annotations

from ....ir import tensor as T
from .. import ops as I
from ..lower_memory import SPACE
from .capabilities import refuse
from .common import Mat, add_addr, elem_addr, label, linear, mat, offset_terms, operands
from .mma_sync import MAX_ACC_REGS, SUB_M, SUB_N, add_origin
from .replay import Region, native_region_pred, native_then_replay
from .scaled import KINDS, _gather, _kind, has_target, run_scaled

# fmt -> (exponent bits, mantissa bits, bias, specials): the neutral minifloats
MINI = {"e4m3": (4, 3, 7, "fn"), "e5m2": (5, 2, 15, "ieee"), "e2m3": (2, 3, 1, "none"),
        "e3m2": (3, 2, 3, "none"), "e2m1": (2, 1, 1, "none"), "ue4m3": (4, 3, 7, "ufn")}
NAN = 0x7FC00000


def check_region(desc: T.TensorDesc, profile, span) -> str:
    """The scaled family of a region descriptor after every capability check."""
    kind = _kind(desc, span)
    if (desc.accumulator_type, desc.result_type) != ("f32", "f32"):
        raise refuse(desc, "block-scaled regions accumulate in f32 with an f32 result", span)
    if desc.sparse or desc.rounding != "default" or desc.overflow != "wrap" or \
            desc.math != "multiply_add" or "unpacked" in (desc.a_packing, desc.b_packing):
        raise refuse(desc, "block-scaled regions are dense, default-rounded, non-saturating "
                     "and read the neutral dense storage stream", span)
    if desc.scope != "subgroup":
        raise refuse(desc, "tensor_matmul regions are subgroup-scoped", span)
    if not has_target(profile):                        # replay alone (module docstring)
        profile.need("warp.sync",
                     f"exact cooperative replay of a block-scaled region ({kind})", span)
    return kind


def decode(em, fmt: str, code: str) -> str:
    """The exact f32 value (as an .f32 register) of a minifloat or scale code."""
    if fmt == "ue8m0":
        return _decode_ue8m0(em, code)
    eb, mb, bias, specials = MINI[fmt]
    e, m, p, sig, ex, f, out = (em.new("r"), em.new("r"), em.new("p"), em.new("r"),
                                em.new("r"), em.new("f"), em.new("f"))
    em.put(I.bfe("u32", e, code, mb, eb), I.binary("and", "b32", m, code, (1 << mb) - 1),
           I.setp("eq", "u32", p, e, 0), I.binary("or", "b32", sig, m, 1 << mb),
           I.selp("b32", sig, m, sig, p),                 # subnormal: no hidden bit
           I.selp("b32", ex, 1, e, p),                    # ... and the exponent of e == 1
           I.binary("add", "u32", ex, ex, 127 - bias - mb),
           I.binary("shl", "b32", ex, ex, 23),            # 2^(e - bias - mb), a normal f32
           I.cvt("f32", "u32", f, sig, rounding="rn"),    # sig < 2^5: exact
           I.binary("mul.rn", "f32", f, f, ex))           # exact power-of-two scaling
    bits = em.new("r")
    em.put(I.mov("b32", bits, f))
    if specials != "ufn":
        sign = em.new("r")
        em.put(I.bfe("u32", sign, code, eb + mb, 1), I.binary("shl", "b32", sign, sign, 31),
               I.binary("or", "b32", bits, bits, sign))
    _specials(em, specials, code, e, m, bits)
    em.put(I.mov("b32", out, bits))
    return out


def _specials(em, specials: str, code: str, e: str, m: str, bits: str) -> None:
    """Overwrite `bits` with NaN/infinity for the format's special codes."""
    p = em.new("p")
    if specials in ("fn", "ufn"):                      # E4M3FN: S.1111.111 is NaN
        low = em.new("r")
        em.put(I.binary("and", "b32", low, code, "0x7F"), I.setp("eq", "u32", p, low, "0x7F"))
        if specials == "ufn":                          # UE4M3: a set sign bit is NaN too
            neg = em.new("p")
            em.put(I.setp("gt", "u32", neg, code, "0x7F"), I.binary("or", "pred", p, p, neg))
        em.put(I.selp("b32", bits, NAN, bits, p))
    elif specials == "ieee":                           # E5M2: exponent 31 is inf/NaN
        inf, q = em.new("r"), em.new("p")
        em.put(I.setp("eq", "u32", p, e, 31), I.binary("and", "b32", inf, bits, "0x80000000"),
               I.binary("or", "b32", inf, inf, "0x7F800000"), I.setp("ne", "u32", q, m, 0),
               I.selp("b32", inf, NAN, inf, q), I.selp("b32", bits, inf, bits, p))


def _decode_ue8m0(em, code: str) -> str:
    """2^(code - 127): code << 23 for 1..254, the subnormal 2^-127 for 0, NaN for 255."""
    bits, p, out = em.new("r"), em.new("p"), em.new("f")
    em.put(I.binary("shl", "b32", bits, code, 23), I.setp("eq", "u32", p, code, 0),
           I.selp("b32", bits, "0x00400000", bits, p), I.setp("eq", "u32", p, code, 255),
           I.selp("b32", bits, NAN, bits, p), I.mov("b32", out, bits))
    return out


def scale_mats(em, desc: T.TensorDesc, ops: dict, K: str, block: int) -> tuple[Mat, Mat]:
    """scale_A (row-major) and scale_B (column-major) views; a missing ld is the packed
    ceil(K/block) of runtime K."""
    packed = None
    out = []
    for side, layout in (("a", "row"), ("b", "col")):
        ld = getattr(desc, f"lds{side}")
        if ld is None and f"lds{side}" in ops:
            ld = em.reg(ops[f"lds{side}"])
        if ld is None:
            if packed is None:
                packed = em.new("r")
                em.put(I.binary("add", "u32", packed, K, block - 1),
                       I.binary("shr", "u32", packed, packed, block.bit_length() - 1))
            ld = packed
        v = ops[f"{side}_scale"]
        out.append(Mat(em.reg(v), SPACE[v.type.space], layout, ld, 8))
    return out[0], out[1]


def scaled_k_loop(SA: Mat, SB: Mat, block: int, stype: str):
    """The replay K loop of a scaled region (see the module docstring)."""

    def k_loop(em, g: Region, gr: str, gc: str, q0: int | str, acc: str) -> None:
        desc = g.desc
        q, nxt, p = em.new("r"), em.new("r"), em.new("p")
        em.put(I.mov("u32", q, q0),
               I.mov("u32", nxt, q))                   # the first q reloads the scales
        ia, ib = em.new("rd"), em.new("rd")
        em.put(I.mov("u64", ia, linear(em, offset_terms(g.A, gr, q))))
        em.put(I.mov("u64", ib, linear(em, offset_terms(g.B, q, gc))))
        step_a = linear(em, offset_terms(g.A, 0, 1))
        step_b = linear(em, offset_terms(g.B, 1, 0))
        row_a = elem_addr(em, SA, gr, 0)               # scale_A row gr, block 0
        col_b = elem_addr(em, SB, 0, gc)               # scale_B column gc, block 0
        sa, sb = em.new("f"), em.new("f")
        top, end, body = label(em, "tsc_k"), label(em, "tsc_kend"), label(em, "tsc_body")
        em.put(I.label(top), I.setp("ge", "u32", p, q, g.K), I.bra(end, guard=p),
               I.setp("ne", "u32", p, q, nxt), I.bra(body, guard=p))
        _reload(em, SA, SB, row_a, col_b, q, block, stype, sa, sb)
        em.put(I.binary("and", "b32", nxt, q, f"{-block & 0xFFFFFFFF:#x}"),
               I.binary("add", "u32", nxt, nxt, block), I.label(body))
        va = decode(em, desc.a_type, _gather(em, g.A, ia, 0, desc.a_type))
        vb = decode(em, desc.b_type, _gather(em, g.B, ib, 0, desc.b_type))
        em.put(I.binary("mul.rn", "f32", va, va, sa),   # exact (see the module docstring)
               I.binary("mul.rn", "f32", vb, vb, sb), I.fma("f32", acc, va, vb, acc),
               I.binary("add", "s64", ia, ia, step_a), I.binary("add", "s64", ib, ib, step_b),
               I.binary("add", "u32", q, q, 1), I.bra(top), I.label(end))
    return k_loop


def _reload(em, SA: Mat, SB: Mat, row_a: str, col_b: str, q: str, block: int, stype: str,
            sa: str, sb: str) -> None:
    """Load and decode the block scales of K position q (block q / block)."""
    blk, wide = em.new("r"), em.new("rd")
    em.put(I.binary("shr", "u32", blk, q, block.bit_length() - 1),
           I.cvt("u64", "u32", wide, blk))             # both tables step 1 byte per block
    for mt, base, dst in ((SA, row_a, sa), (SB, col_b, sb)):
        code = em.new("r")
        em.put(I.ld(mt.space, "u8", code, I.mem(add_addr(em, base, wide))))
        em.put(I.mov("f32", dst, decode(em, stype, code)))


def has_interior(desc: T.TensorDesc, kind: str) -> bool:
    """Whether the region shape is an exact m16n8 grid within the accumulator budget."""
    return desc.m % SUB_M == 0 and desc.n % SUB_N == 0 and \
        desc.m * desc.n // 32 <= MAX_ACC_REGS and desc.k % KINDS[kind][0] == 0


def lower_scaled_matmul(em, ins) -> None:
    desc, ops = ins.attrs["desc"], operands(ins)
    kind = check_region(desc, em.profile, ins.span)
    k, block, stype = KINDS[kind][0], KINDS[kind][2], KINDS[kind][3]
    A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
    g = Region(desc, A, B, C, D, *(em.reg(ops[k]) for k in ("row", "column", "m", "n", "k")))
    SA, SB = scale_mats(em, desc, ops, g.K, block)
    k_loop = scaled_k_loop(SA, SB, block, stype)
    pred = native_region_pred(em, g, k) if has_interior(desc, kind) and \
        has_target(em.profile) else None

    def native(chunks):
        views = (A, B, add_origin(em, C, g.row, g.col), add_origin(em, D, g.row, g.col),
                 SA, SB)
        run_scaled(em, desc, kind, views, chunks, origin=(g.row, g.col))
    native_then_replay(em, g, "tsc", pred, k, native, k_loop)
