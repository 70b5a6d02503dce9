"""Block-scaled FP8/FP6/FP4 tensor_mma tiles on PTX 8.8 sm_120a/sm_121a `mma.sync`.

Families (gpu.md table), all f32 accumulate/result, both sides scaled the same way:
  mxf8f6f4  any E4M3/E5M2/E2M3/E3M2/E2M1 A/B pair, UE8M0 block32, m16n8k32, scale_vec::1X
  mxf4      E2M1 x E2M1, UE8M0 block32, m16n8k64 (K % 64 == 0), scale_vec::2X
  mxf4nvf4  E2M1 x E2M1, UE4M3 block16, m16n8k64, scale_vec::4X
Only architecture-specific sm_120a/sm_121a at PTX ISA 8.8 have these (ptxas 13.0 rejects
raw sm_121); anything else is E0504, unsupported descriptors E0505. tensor_matmul regions
of these families are lowered by scaled_matmul.py.

Operands: the neutral dense stream (LSB-first, logical element strides, transpose folded
into the stored layout) is gathered per element by bit offset, so FP6 values that straddle
a byte are exact and nothing past the value's last byte is read. mxf8f6f4 takes each value
in an 8-bit container (FP6 in bits 5..0, FP4 in bits 5..2, so an E2M1 container is the
E2M3 encoding of the same value); mxf4/mxf4nvf4 take packed nibbles, element 0 lowest.
Fragment maps: the 8-bit m16n8k32 maps for mxf8f6f4, the 4-bit m16n8k64 (.s4) maps for
FP4. Scales: scale_A row-major [M, ceil(K/block)] (ldsa), scale_B column-major
[ceil(K/block), N] (ldsb). Lane words: A bytes 0..v-1 hold the chunk's v block scales of
row gid (even tig) or gid+8 (odd tig); for v == 1 byte 1 holds the other row and bytes
2..3 repeat 0..1. B bytes hold column gid's scales. byte-id and thread-id are 0.
These maps are assembler-checked only: no sm_120a/121a device ran them here.
"""
from __future__ import annotations

from ....diagnostics import error
from ....ir import tensor as T
from .. import ops as I
from ..lower_memory import SPACE
from .capabilities import refuse
from .common import Mat, add_addr, label, linear, mat, offset_terms
from .frag import A8_K32, B8_K32, FragSpec, lane_ids, make_spec
from .mma_sync import MAX_ACC_REGS, SUB_M, SUB_N, Acc, Operand, load_c, store_d

MX = ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")
BITS = {"e4m3": 8, "e5m2": 8, "e2m3": 6, "e3m2": 6, "e2m1": 4}
A4_K64 = make_spec("a", 8, 8, lambda i: (8 * ((i >> 3) & 1), (i & 7) + 32 * (i >> 4)), 32)
B4_K64 = make_spec("b", 8, 8, lambda i: ((i & 7) + 32 * (i >> 3), 0), 16)
# kind -> (K, vector, block, scale type, A map, B map)
KINDS = {"mxf8f6f4": (32, 1, 32, "ue8m0", A8_K32, B8_K32),
         "mxf4": (64, 2, 32, "ue8m0", A4_K64, B4_K64),
         "mxf4nvf4": (64, 4, 16, "ue4m3", A4_K64, B4_K64)}


def _kind(desc: T.TensorDesc, span) -> str:
    a, b = desc.a_type, desc.b_type
    modes = (desc.a_scale_mode, desc.b_scale_mode)
    stypes = (desc.a_scale_type, desc.b_scale_type)
    if a not in MX or b not in MX:
        raise refuse(desc, f"block-scaled MMA takes FP8/FP6/FP4 A and B, found {a} and {b}",
                     span)
    if modes == ("block16", "block16") and stypes == ("ue4m3", "ue4m3") and a == b == "e2m1":
        return "mxf4nvf4"
    if modes == ("block32", "block32") and stypes == ("ue8m0", "ue8m0"):
        return "mxf4" if a == b == "e2m1" and desc.k % 64 == 0 else "mxf8f6f4"
    raise refuse(desc, "block scaling is UE8M0 block32 on both sides (mxf8f6f4, MXFP4) or "
                 "UE4M3 block16 on both sides with E2M1 A and B (NVFP4), found "
                 f"{modes[0]}/{stypes[0]} and {modes[1]}/{stypes[1]}", span)


def check(desc: T.TensorDesc, profile, span, native: bool = True) -> str:
    """The family of a tile after every check; `native=False` (a replayed tile) skips only
    the target gate."""
    kind = _kind(desc, span)
    if (desc.accumulator_type, desc.result_type) != ("f32", "f32"):
        raise refuse(desc, "block-scaled MMA accumulates in f32 with an f32 result", span)
    if desc.sparse or desc.rounding != "default" or desc.overflow != "wrap" or \
            desc.math != "multiply_add" or "unpacked" in (desc.a_packing, desc.b_packing):
        raise refuse(desc, "block-scaled MMA is dense, default-rounded, non-saturating "
                     "and reads the neutral dense storage stream", span)
    k = KINDS[kind][0]
    m, n = desc.m, desc.n
    if m % SUB_M or n % SUB_N or desc.k % k or m * n // 32 > MAX_ACC_REGS:
        raise refuse(desc, f"{kind} tiles are exact grids of m16n8k{k} with at most "
                     f"{MAX_ACC_REGS * 32} outputs, found m{m}n{n}k{desc.k}", span)
    if native:
        require_target(kind, profile, span)
    return kind


def has_target(profile) -> bool:
    """Whether the profile has the block-scaled mma.sync: PTX ISA 8.8+ on the
    architecture-specific sm_120a/sm_121a."""
    return profile.has("mma.block_scale")


def require_target(kind: str, profile, span, what: str = "block-scaled MMA") -> None:
    """E0504 unless has_target(profile)."""
    if not has_target(profile):
        raise error("E0504", f"{what} ({kind}) needs PTX ISA 8.8 and target "
                    f"sm_120a or sm_121a; the profile is PTX {profile.version} / "
                    f"{profile.target}", span,
                    help="compile with --gpu-arch=sm_121a (or sm_120a) and --ptx-version=8.8")


def tile_lowering(desc: T.TensorDesc, profile, span):
    kind = check(desc, profile, span)

    def run(em, ops, res=None):
        _tile(em, desc, kind, ops, res)
    return run


def _scale_mat(em, desc, ops, side: str, block: int) -> Mat:
    v = ops[f"{side}_scale"]
    ld = getattr(desc, f"lds{side}")
    if ld is None:
        ld = em.reg(ops[f"lds{side}"]) if f"lds{side}" in ops else -(-desc.k // block)
    return Mat(em.reg(v), SPACE[v.type.space], "row" if side == "a" else "col", ld, 8)


def _gather(em, m: Mat, lane_idx: str, delta: int | str, fmt: str) -> str:
    """The `bits`-wide code of the element at index lane_idx + delta of a dense stream."""
    bits = BITS[fmt]
    idx = add_addr(em, lane_idx, delta)
    v = em.new("r")
    if bits == 8:
        em.put(I.ld(m.space, "u8", v, I.mem(add_addr(em, m.base, idx))))
        return v
    bit, byte, sh = em.new("rd"), em.new("rd"), em.new("r")
    em.put(I.binary("mul.lo", "u64", bit, idx, bits), I.binary("shr", "u64", byte, bit, 3),
           I.cvt("u32", "u64", sh, bit), I.binary("and", "b32", sh, sh, 7))
    addr = add_addr(em, m.base, byte)
    em.put(I.ld(m.space, "u8", v, I.mem(addr)))
    if bits == 6:                                  # a value may straddle two bytes
        hi, p = em.new("r"), em.new("p")
        em.put(I.mov("b32", hi, 0), I.setp("gt", "u32", p, sh, 2),
               I.ld(m.space, "u8", hi, I.mem(addr, 1), guard=p),
               I.bfi("b32", v, hi, v, 8, 8))
    em.put(I.binary("shr", "b32", v, v, sh), I.binary("and", "b32", v, v, (1 << bits) - 1))
    return v


class _Stream:
    """A/B of one scaled tile: this lane's element index and memoised static deltas."""

    def __init__(self, em, m: Mat, spec: FragSpec, lane, fmt: str, kind: str,
                 origin: tuple = (0, 0)):
        self.em, self.m, self.spec, self.fmt, self.kind = em, m, spec, fmt, kind
        scaled = em.new("r")
        em.put(I.binary("shl", "b32", scaled, lane.tig, spec.w.bit_length() - 1))
        r, c = (lane.gid, scaled) if spec.kind == "a" else (scaled, lane.gid)
        self.idx = em.new("rd")                    # origin: a sub-byte stream stays exact
        em.put(I.mov("u64", self.idx,
                     linear(em, offset_terms(m, r, c) + offset_terms(m, *origin))))

    def advance(self, rows: int, cols: int) -> None:
        """Move this lane's element index by a static logical (rows, cols) step."""
        step = linear(self.em, offset_terms(self.m, rows, cols))
        self.em.put(I.binary("add", "s64", self.idx, self.idx, step))

    def frag(self, dr0: int, dc0: int) -> list[str]:
        em, out = self.em, []
        codes = [_gather(em, self.m, self.idx, linear(em, offset_terms(self.m, dr0 + dr,
                                                                       dc0 + dc)), self.fmt)
                 for dr, dc in self.spec.elems]
        if self.kind == "mxf8f6f4":
            if BITS[self.fmt] == 4:
                em.put(*(I.binary("shl", "b32", c, c, 2) for c in codes))
            for i in range(0, len(codes), 4):
                out.append(_pack4(em, codes[i:i + 4]))
            return out
        for i in range(0, len(codes), 8):
            w = em.new("r")
            em.put(I.mov("b32", w, 0))
            em.put(*(I.bfi("b32", w, c, w, 4 * j, 4) for j, c in enumerate(codes[i:i + 8])))
            out.append(w)
        return out


def _pack4(em, parts: list[str]) -> str:
    lo, hi, out = em.new("r"), em.new("r"), em.new("r")
    em.put(I.prmt(lo, parts[0], parts[1], "0x3340"), I.prmt(hi, parts[2], parts[3], "0x3340"),
           I.prmt(out, lo, hi, "0x5410"))
    return out


def _scale_word(em, mt: Mat, picks: list[tuple[str, int, int]]) -> str:
    """Four scale bytes, byte 0 first, each at base + the static (row, col) delta."""
    offs = Operand(em, mt, "").offs
    vals = []
    for base, dr, dc in picks:
        v = em.new("r")
        em.put(I.ld(mt.space, "u8", v, I.mem(add_addr(em, base, offs.get(dr, dc)))))
        vals.append(v)
    return _pack4(em, vals)


def _tile(em, desc: T.TensorDesc, kind: str, ops: dict, res=None) -> None:
    block = KINDS[kind][2]
    A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
    SA, SB = _scale_mat(em, desc, ops, "a", block), _scale_mat(em, desc, ops, "b", block)
    run_scaled(em, desc, kind, (A, B, C, D, SA, SB), desc.k // KINDS[kind][0], res=res)


def run_scaled(em, desc: T.TensorDesc, kind: str, mats, chunks: int | str,
               origin: tuple = (0, 0), res: Acc | None = None) -> None:
    """D = C + scaled A*B over `chunks` K chunks of one desc.m x desc.n tile: an int unrolls
    them (a whole tensor_mma tile), a u32 register (>= 1) loops at run time, advancing the
    A/B element indices by one chunk and the scale bases by `vec` blocks per trip.
    `origin` (row, col) is the tile's logical origin: it offsets A's rows, B's columns and
    the scale tables; C and D must already be views at that origin. With a resident `res`
    (mma_sync.Acc) the chunks accumulate into its registers; C and D are not touched."""
    k, vec, block, stype, a_spec, b_spec = KINDS[kind]
    A, B, C, D, SA, SB = mats
    gm, gn = desc.m // SUB_M, desc.n // SUB_N
    lane = res.lane if res else lane_ids(em)
    whole = res or load_c(em, lane, C, (gm, gn))
    acc = whole.regs
    sa_own, sa_other, sb = _scale_bases(em, lane, SA, SB, origin)
    a_st = _Stream(em, A, a_spec, lane, desc.a_type, kind, (origin[0], 0))
    b_st = _Stream(em, B, b_spec, lane, desc.b_type, kind, (0, origin[1]))
    looped = isinstance(chunks, str)
    if looped:
        trip, top, p = em.new("r"), label(em, "tsc_chunk"), em.new("p")
        em.put(I.mov("u32", trip, chunks), I.label(top))
    for kk in ([0] if looped else range(chunks)):
        blk = kk * vec
        held = []
        for i in range(gm):
            picks = [(sa_own, SUB_M * i, blk + t % vec) for t in range(4)]
            if vec == 1:
                picks = [(sa_own, SUB_M * i, blk), (sa_other, SUB_M * i, blk)] * 2
            held.append((a_st.frag(SUB_M * i, kk * k), _scale_word(em, SA, picks)))
        for j in range(gn):
            bf = b_st.frag(kk * k, SUB_N * j)
            sw = _scale_word(em, SB, [(sb, blk + t % vec, SUB_N * j) for t in range(4)])
            for i, (af, aw) in enumerate(held):
                d = acc[i][j]
                em.put(I.mma_block_scale(kind, f"{vec}X", k, desc.a_type, desc.b_type, stype,
                                         d, af, bf, d, aw, sw))
    if looped:
        a_st.advance(0, k)
        b_st.advance(k, 0)
        em.put(*(I.binary("add", "s64", base, base, vec)   # both tables: 1 byte per block
                 for base in (sa_own, sa_other, sb)))
        em.put(I.binary("sub", "u32", trip, trip, 1), I.setp("ne", "u32", p, trip, 0),
               I.bra(top, guard=p, uniform=True))
    if res is None:
        store_d(em, whole, D)


def _scale_bases(em, lane, SA: Mat, SB: Mat, origin: tuple = (0, 0)) -> tuple[str, str, str]:
    """Lane bases of the scale tables (fresh, movable registers): A at this lane's own row
    gid + 8*(tig & 1) and at the quad's other row (gid + 8 - 8*(tig & 1)), B at column gid,
    all shifted by the tile origin."""
    odd, own, other = em.new("r"), em.new("r"), em.new("r")
    em.put(I.binary("and", "b32", odd, lane.tig, 1), I.binary("shl", "b32", odd, odd, 3),
           I.binary("add", "u32", own, lane.gid, odd),
           I.binary("xor", "b32", other, own, 8))    # gid < 8: flips between gid and gid+8
    row0, col0 = origin
    out = []
    for mt, terms in ((SA, offset_terms(SA, own, 0) + offset_terms(SA, row0, 0)),
                      (SA, offset_terms(SA, other, 0) + offset_terms(SA, row0, 0)),
                      (SB, offset_terms(SB, 0, lane.gid) + offset_terms(SB, 0, col0))):
        r = em.new("rd")
        em.put(I.mov("u64", r, add_addr(em, mt.base, linear(em, terms))))
        out.append(r)
    return out[0], out[1], out[2]
