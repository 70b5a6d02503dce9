"""Structured 2:4 f16/bf16 tensor operations on PTX `mma.sp` (m16n8k16, f32 accumulate).

Neutral contract (gpu.md "Structured sparsity"): A is compressed, each logical 4-wide K
group stores its two selected values in increasing index order (A's stored row is K/2
long), and `metadata` is a compact row-major uint8 [M, ceil(K/4)] matrix of 4-bit masks.

PTX translation (PTX ISA "Sparse matrix metadata", m16n8k16 .f16/.bf16): one 32-bit word
per lane holds the index pairs of rows gid (bits 0..15) and gid+8 (bits 16..31) of its
m16 row tile; group g of the chunk is the nibble at 4g: the first selected index in its
low two bits, the second in its high two bits (ordered, as `::ordered_metadata` requires).
Every lane builds the same word for its quad, so any sparsity selector is valid; 0 is used.
A mask that does not have exactly two of its low four bits set is clamped to 0b0011 (the
same rule as the replay and the CPU oracle), so hardware never sees an undefined encoding.
The translation is a 16-entry nibble table held in one 64-bit constant.

Capabilities: `mma.sp` PTX ISA 7.1 / sm_80; the ordered-metadata spelling from PTX 8.5 on
(the unordered one is used below 8.5). M % 16 == 0, N % 8 == 0, K % 16 == 0, subgroup scope.
"""
from __future__ import annotations

from ....ir import tensor as T
from .. import ops as I
from .capabilities import refuse
from ..lower_memory import SPACE
from .common import Mat, elem_addr, label
from .frag import A16_SPARSE, B16_K16, Offsets
from .mma_sync import MAX_ACC_REGS, SUB_M, SUB_N, Form

MASK_TABLE = 0x444E4DC449844444       # nibble m: (first | second << 2) of mask m, clamped


def check(desc: T.TensorDesc, profile, span) -> None:
    if desc.sparsity != "structured_2_to_4":
        raise refuse(desc, f"`sparsity: {desc.sparsity}` has no PTX form; structured 2:4 "
                     "is the supported ratio", span)
    if desc.a_type != desc.b_type or desc.a_type not in ("f16", "bf16"):
        raise refuse(desc, f"structured 2:4 MMA needs f16 or bf16 for both A and B, found "
                     f"{desc.a_type} and {desc.b_type}", span)
    if (desc.accumulator_type, desc.result_type) != ("f32", "f32"):
        raise refuse(desc, "structured 2:4 MMA accumulates in f32 with an f32 result", span)
    if desc.scaled or desc.rounding != "default" or desc.overflow != "wrap" or \
            desc.math != "multiply_add":
        raise refuse(desc, "structured 2:4 MMA has no scaling, rounding or saturation "
                     "options", span)
    if desc.scope != "subgroup":
        raise refuse(desc, "structured 2:4 MMA is subgroup-scoped", span)
    profile.need("mma.sp", "structured 2:4 sparse MMA (mma.sp)", span)
    m, n, k = desc.m, desc.n, desc.k
    if m % SUB_M or n % SUB_N or k % 16 or m * n // 32 > MAX_ACC_REGS:
        raise refuse(desc, f"structured 2:4 tiles are exact grids of m16n8k16 with "
                     f"at most {MAX_ACC_REGS * 32} outputs, found m{m}n{n}k{k}", span)


def form(desc: T.TensorDesc, profile) -> Form:
    sp = "mma.sp::ordered_metadata" if profile.has("mma.sp::ordered_metadata") \
        else "mma.sp"
    t = desc.a_type
    return Form(16, A16_SPARSE, B16_K16,
                f"{sp}.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32", 8)


def meta_mat(em, ops: dict, ld: int | str) -> Mat:
    v = ops["metadata"]
    return Mat(em.reg(v), SPACE[v.type.space], "row", ld, 8)


def translate(em, table: str, mask: str) -> str:
    """The clamped 4-bit index pair of one mask byte (a u32 register)."""
    sh, wide, nib = em.new("r"), em.new("rd"), em.new("r")
    em.put(I.binary("and", "b32", sh, mask, 15), I.binary("shl", "b32", sh, sh, 2),
           I.binary("shr", "b64", wide, table, sh), I.cvt("u32", "u64", nib, wide),
           I.binary("and", "b32", nib, nib, 15))
    return nib


def _table(em) -> str:
    t = em.new("rd")
    em.put(I.mov("b64", t, f"{MASK_TABLE:#x}"))
    return t


class Meta:
    """Per-lane metadata stream of a tile: a moving pointer to row gid, group 0."""

    def __init__(self, m: Mat):
        self.m = m

    def bind(self, em, lane) -> None:
        self.table = _table(em)
        self.offs = Offsets(em, self.m)
        self.ptr = em.new("rd")
        row = elem_addr(em, self.m, lane.gid, 0)
        em.put(I.mov("u64", self.ptr, row))

    def prewarm(self, em, gm: int) -> None:
        for i in range(gm):
            for h in (0, 8):
                for g in range(4):
                    self.offs.get(SUB_M * i + h, g)

    def word(self, em, i: int, group: int) -> tuple[str, str]:
        w = em.new("r")
        em.put(I.mov("b32", w, 0))
        for h in (0, 1):
            for g in range(4):
                a, off = em.new("rd"), self.offs.get(SUB_M * i + 8 * h, group + g)
                em.put(I.binary("add", "s64", a, self.ptr, off))
                mask = em.new("r")
                em.put(I.ld(self.m.space, "u8", mask, I.mem(a)))
                pair = translate(em, self.table, mask)
                em.put(I.bfi("b32", w, pair, w, 16 * h + 4 * g, 4))
        return w, "0"

    def advance(self, em, groups: int) -> None:
        em.put(I.binary("add", "s64", self.ptr, self.ptr, groups))


def k_loop(meta: Mat):
    """The exact sparse replay of one output element (replay.replay's `k_loop` hook):
    group by group from q0/4, the two selected positions in increasing order, positions at
    or beyond K skipped, f32 FMA."""
    from .replay import fma, load_value

    def run(em, g, gr: str, gc: str, q0: int | str, acc: str) -> None:
        desc, table = g.desc, _table(em)
        grp, q4, p = em.new("r"), em.new("r"), em.new("p")
        em.put(I.mov("u32", grp, q0), I.binary("shr", "u32", grp, grp, 2))
        top, end = label(em, "tsp_g"), label(em, "tsp_gend")
        em.put(I.label(top), I.binary("shl", "b32", q4, grp, 2),
               I.setp("ge", "u32", p, q4, g.K), I.bra(end, guard=p))
        mask = em.new("r")
        at = elem_addr(em, meta, gr, grp)
        em.put(I.ld(meta.space, "u8", mask, I.mem(at)))
        nib = translate(em, table, mask)
        for s in (0, 1):
            idx, q, col, skip = em.new("r"), em.new("r"), em.new("r"), label(em, "tsp_s")
            em.put(I.bfe("u32", idx, nib, 2 * s, 2), I.binary("add", "u32", q, q4, idx),
                   I.setp("ge", "u32", p, q, g.K), I.bra(skip, guard=p),
                   I.mad("lo", "u32", col, grp, 2, s))
            va = load_value(em, desc.a_type, g.A, elem_addr(em, g.A, gr, col))
            vb = load_value(em, desc.b_type, g.B, elem_addr(em, g.B, q, gc))
            fma(em, desc.accumulator_type, acc, va, vb)
            em.put(I.label(skip))
        em.put(I.binary("add", "u32", grp, grp, 1), I.bra(top), I.label(end))
    return run
