"""Warp-level `mma.sync`-family tiles: a logical M x N tile as a grid of m16n8 subtiles.

`run_tile` computes D = A*B + C for one logical tile whose (0, 0) elements are the Mat
bases: C is loaded once into resident f32 accumulators (4 per subtile per lane), every K
chunk loads each row tile's A fragment once (plus its metadata word, for sparse forms) and
each column tile's B fragment once, issues gm*gn instructions, and D is stored once.
`chunks` is a list of `Form`s (a whole tensor_mma tile, unrolled; forms may differ per
chunk, e.g. k32 then k16) or a (Form, u32 register) pair (a tensor_matmul interior: a
runtime loop of >= 1 chunks whose A/B/metadata pointers advance one chunk per trip).

Every operand keeps one pointer; subtile and element positions are static deltas whose
byte offsets are memoised (frag.Offsets) and computed before a runtime loop starts.

The accumulator coordinate mapping is backend-owned (frag.ACC_F32): register r of subtile
(i, j) of a lane holds logical (16*i + groupID + 8*(r >> 1), 8*j + 2*threadID_in_group +
(r & 1)). `Acc` is such a grid kept resident across a group of updates (resident.py): its
updates pass it as `res`, which skips the C load and the D store, and a fused epilogue
(epilogue.py) addresses bias elements with the same mapping (`acc_offsets`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ops as I
from .common import Mat, add_addr, label, linear, offset_terms, scale_bytes
from .frag import (ACC_F32, FragSpec, Lane, Offsets, element_addrs, lane_base, lane_ids,
                   load_acc, load_packed, store_acc)

SUB_M, SUB_N = 16, 8
MAX_ACC_REGS = 128                     # resident f32 accumulators per lane (M*N/32)


@dataclass(frozen=True)
class Form:
    k: int              # logical K of one instruction
    a: FragSpec
    b: FragSpec
    head: str           # instruction spelling up to the operands
    a_cols: int         # stored A columns one chunk consumes (k, or k/2 when compressed)


class Operand:
    """One streamed operand: a moving pointer to this lane's (0, 0) element plus memoised
    static deltas."""

    def __init__(self, em, m: Mat, ptr: str):
        self.em, self.m, self.ptr, self.offs = em, m, ptr, Offsets(em, m)

    def addrs(self, spec: FragSpec, dr0: int, dc0: int) -> list[str]:
        return element_addrs(self.em, spec, self.offs, self.ptr, dr0, dc0)

    def advance(self, rows: int, cols: int) -> None:
        step = scale_bytes(self.em, linear(self.em, offset_terms(self.m, rows, cols)),
                           self.m.bits)
        self.em.put(I.binary("add", "s64", self.ptr, self.ptr, step))


@dataclass
class Acc:
    """A lane's resident accumulator grid: gm x gn tuples of four f32 registers."""
    lane: Lane
    grid: tuple[int, int]
    regs: list = field(default_factory=list)     # [i][j] -> 4 registers (ACC_F32 order)


def acc_offsets(em, lane: Lane, m: Mat, grid: tuple[int, int]) -> tuple[str, list]:
    """(this lane's base address in `m`, [i][j] -> the byte offsets of its four accumulator
    elements): the m16n8 coordinate mapping applied to any matrix view (C, D, a bias).
    Offsets are ints or registers, equal whenever the elements' addresses are equal."""
    offs = Offsets(em, m)
    base = lane_base(em, ACC_F32, lane, m, m.base)
    gm, gn = grid
    return base, [[[offs.get(SUB_M * i + dr, SUB_N * j + dc) for dr, dc in ACC_F32.elems]
                   for j in range(gn)] for i in range(gm)]


def load_c(em, lane: Lane, C: Mat, grid: tuple[int, int]) -> Acc:
    base, offs = acc_offsets(em, lane, C, grid)
    return Acc(lane, grid, [[load_acc(em, C.space, [add_addr(em, base, o) for o in sub])
                             for sub in row] for row in offs])


def store_d(em, acc: Acc, D: Mat) -> None:
    base, offs = acc_offsets(em, acc.lane, D, acc.grid)
    for row, regs_row in zip(offs, acc.regs):
        for sub, regs in zip(row, regs_row):
            store_acc(em, D.space, [add_addr(em, base, o) for o in sub], regs)


def tuple_pressure(grid: tuple[int, int], a_regs: int, b_regs: int, a_word: int = 0,
                   b_word: int = 0) -> int:
    """Logical registers per lane of a resident grid (resident.py's model): the f32
    accumulators, every row tile's held A fragment and one streamed B fragment, each with
    its metadata/scale word where the family has one (a_word/b_word = 1)."""
    gm, gn = grid
    return gm * gn * len(ACC_F32.elems) + gm * (a_regs + a_word) + b_regs + b_word


def _pointer(em, spec: FragSpec, lane: Lane, m: Mat) -> Operand:
    ptr = em.new("rd")
    em.put(I.mov("u64", ptr, lane_base(em, spec, lane, m, m.base)))
    return Operand(em, m, ptr)


class Tile:
    """The resident state of one logical tile (see the module docstring)."""

    def __init__(self, em, A: Mat, B: Mat, grid: tuple[int, int], first: Form, meta=None,
                 lane: Lane | None = None):
        self.em, self.grid, self.meta = em, grid, meta
        self.lane = lane or lane_ids(em)
        self.a = _pointer(em, first.a, self.lane, A)
        self.b = _pointer(em, first.b, self.lane, B)
        if meta is not None:
            meta.bind(em, self.lane)
        self.acc: list[list[list[str]]] = []

    def chunk(self, form: Form, a_col: int, b_row: int, group: int) -> None:
        """One K chunk at static deltas from the current pointers; A fragments (and
        metadata) of every row tile are held, B fragments are streamed."""
        em, (gm, gn) = self.em, self.grid
        held = []
        for i in range(gm):
            a = load_packed(em, form.a, self.a.m.space, self.a.addrs(form.a, SUB_M * i, a_col))
            extra = self.meta.word(em, i, group) if self.meta is not None else ()
            held.append((a, extra))
        for j in range(gn):
            b = load_packed(em, form.b, self.b.m.space, self.b.addrs(form.b, b_row, SUB_N * j))
            for i, (a, extra) in enumerate(held):
                acc = self.acc[i][j]
                em.put(I.mma_sync(form.head, acc, a, b, acc, *extra))

    def prewarm(self, form: Form) -> None:
        gm, gn = self.grid
        for i in range(gm):
            self.a.addrs(form.a, SUB_M * i, 0)
        for j in range(gn):
            self.b.addrs(form.b, 0, SUB_N * j)
        if self.meta is not None:
            self.meta.prewarm(self.em, gm)


def run_tile(em, A: Mat, B: Mat, C: Mat | None, D: Mat | None, grid: tuple[int, int],
             chunks, meta=None, res: Acc | None = None) -> None:
    """D = A*B + C over one logical tile (see the module docstring); with a resident `res`
    the update accumulates into its registers and neither C nor D is touched."""
    forms = chunks if isinstance(chunks, list) else [chunks[0]]
    tile = Tile(em, A, B, grid, forms[0], meta, res.lane if res else None)
    acc = res or load_c(em, tile.lane, C, grid)
    tile.acc = acc.regs
    if isinstance(chunks, list):
        a_col = b_row = 0
        for form in chunks:
            tile.chunk(form, a_col, b_row, b_row // 4)
            a_col, b_row = a_col + form.a_cols, b_row + form.k
    else:
        form, count = chunks
        tile.prewarm(form)
        left, more = em.new("r"), em.new("p")
        em.put(I.mov("u32", left, count))
        top = label(em, "tms_k")
        em.put(I.label(top))
        tile.chunk(form, 0, 0, 0)
        tile.a.advance(0, form.a_cols)
        tile.b.advance(form.k, 0)
        if meta is not None:
            meta.advance(em, form.k // 4)
        em.put(I.binary("sub", "u32", left, left, 1), I.setp("ne", "u32", more, left, 0),
               I.bra(top, guard=more, uniform=True))
    if res is None:
        store_d(em, acc, D)


def add_origin(em, m: Mat, row, col) -> Mat:
    """The view of `m` whose (0, 0) is logical (row, col) of `m`."""
    addr = add_addr(em, m.base, scale_bytes(em, linear(em, offset_terms(m, row, col)),
                                            m.bits))
    return Mat(addr, m.space, m.layout, m.ld, m.bits)
