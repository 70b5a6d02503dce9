"""The FP8 workgroup region's split regions on the FP8 warp MMA (docs/reference/gemm-fp8.md).

Where the sm_90a pipeline is not taken, wgmma_fp8 splits the workgroup region into subgroup
regions the warps take round-robin. On a profile with the FP8 warp MMA (`available`) and
K-major operands (A row-major, B column-major: the pipeline's layout and torch._scaled_mm's)
a complete warp computes its region here; a partial warp, another layout or a profile
without the instruction keeps the exact replay (replay.py). For every in-range element the
result is the replay's formula; only the order of the f32 sum differs (the tensor core's is
unspecified):

  S = sum(q < K) A[r,q]*B[q,c]   warp MMAs into f32 accumulators that start at +0
  t = combine(S, s, C[r,c])      wgmma_fp8.combine: fma.rn(S, s, C), or add.rn(S, C)
  D = round(epilogue(t))         the fused epilogue at (r, c), then D's one rounding

The MMA: m16n8k32 E4M3/E5M2 (PTX 8.4, sm_89+), or on sm_90 (`f16_route`: its FP8 mma.sync
is emulated) an exact decode to f16 pairs and m16n8k16 f16 MMAs with f32 accumulators.
Operands, one lane's share (rows gid, gid+8 of each m16 tile of A, column gid of each n8
tile of B: the "lines"):
- K runs in steps of STEP = 64 bytes; in each, a lane reads 16 contiguous bytes of each of
  its lines at 16 tig. Fed to the MMAs as words (k32: word 2c + s is chunk c, register half
  s; k16: word c is chunk c), which permutes the MMA's K index the same way for A and B
  and so keeps the sum's terms. The loads are the widest that a uniform run-time test of
  A's and B's bases and leading dimensions allows: 16 bytes (ld.v4.b32), 8 (ld.v2.b32), 4
  (ld.b32), else single bytes packed with prmt. Two register buffers alternate so a step's
  loads are in flight during the previous step's MMAs (single bytes: one buffer).
- The last K mod STEP bytes are one more step of single-byte loads, each predicated on
  q < K and zero-filled (+0 * +0 adds nothing): no byte past K is read.
- M/N edges: a lane's line index is clamped to the last in-range row (column), so operand
  loads are in bounds and unpredicated; a clamped line only feeds accumulators of
  out-of-range outputs, whose C load and D store are predicated off (a bias is read at the
  clamped coordinates). A region wholly out of range is skipped.
Regions are SUB_M x SUB_N (smaller where the workgroup region needs it): 32 x 32 keeps the
pipeline launch's 12 warps 89% busy over a 128 x 256 region (32 x 64: 67%); wgmma_fp8
numbers them down columns (round_robin's down_first), so the 12 warps at work at once read
128 A rows and 96 B columns (along rows: 64 and 256), which L1 serves to all of them.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ops as I
from .common import Mat, add_addr, label, linear, offset_terms, scale_bytes
from .fp8 import form as fp8_form
from .frag import Lane, lane_ids
from .mma_sync import SUB_M as TILE_M, SUB_N as TILE_N, acc_offsets, add_origin

SUB_M, SUB_N = 32, 32
STEP = 64                                  # K bytes per main-loop step (two k32 MMAs)
F16_HEAD = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
WIDTHS = (16, 8, 4, 1)                     # load widths in bytes, widest first


def available(em, desc) -> bool:
    """Whether split regions of `desc` compute on the FP8 warp MMA on this profile."""
    return ((em.profile.has("mma.fp8.k32") or f16_route(em.profile))
            and desc.stored_layout("a") == "row" and desc.stored_layout("b") == "col")


def f16_route(profile) -> bool:
    """sm_90 has no FP8 mma.sync datapath: ptxas expands each m16n8k32 into conversions,
    two f16 HMMAs into a zeroed tile and four FADDs (seen in its SASS). There the region
    decodes FP8 exactly to f16 itself (cvt.rn.f16x2.e4m3x2/e5m2x2) and issues m16n8k16 f16
    MMAs that accumulate straight into the f32 tile: the same products, exact in f32."""
    return profile.fp8_mma_emulated and profile.has("mma.sync") and \
        profile.has("cvt.f16x2.fp8")


def sub_desc(desc, sub):
    """The MMA form's subgroup-region descriptor: `sub` (wgmma_split.sub_desc) resized to
    SUB_M x SUB_N, or the largest 16-multiple that divides the region."""
    pick = lambda n, want: next(s for s in (want, 16) if n % s == 0)      # noqa: E731
    return replace(sub, m=pick(desc.m, SUB_M), n=pick(desc.n, SUB_N))


def region(em, g, scale: str | None, fused, replay_region, warp=None) -> None:
    """One subgroup region (g.desc, origin g.row/g.col) on the warp MMA when the warp is
    complete, else `replay_region()` (the exact replay); ends with the warp reconverged.
    `warp`: the _Warp class computing it (split_mma16's for 16-bit A/B)."""
    end, slow = label(em, "f8s_end"), label(em, "f8s_replay")
    mask, partial, out = em.new("r"), em.new("p"), em.new("p")
    em.put(I.activemask(mask), I.setp("ne", "u32", partial, mask, "0xFFFFFFFF"),
           I.bra(slow, guard=partial, uniform=True),
           I.setp("ge", "u32", out, g.row, g.M), I.bra(end, guard=out, uniform=True),
           I.setp("ge", "u32", out, g.col, g.N), I.bra(end, guard=out, uniform=True))
    (warp or _Warp)(em, g).run(scale, fused)
    em.put(I.bra(end, uniform=True), I.label(slow))
    replay_region()
    em.put(I.label(end))
    em.put(I.activemask(mask), I.bar_warp_sync(mask))


class _Warp:
    """The MMA form of one region for one complete warp (module docstring). The class
    attributes are the element size's (split_mma16._Warp16 overrides them for 16 bits)."""
    WIDTHS = WIDTHS
    ELEM_SHIFT = 0                 # log2 of the element's bytes
    NARROW = "u8"                  # the narrowest load, one element
    ZERO = "0f00000000"            # the accumulators' start

    def __init__(self, em, g):
        self.em, self.g, desc = em, g, g.desc
        self.gm, self.gn = desc.m // TILE_M, desc.n // TILE_N
        self.form = self._form(desc)
        self.f16 = f16_route(em.profile)
        self.lane: Lane = lane_ids(em)
        # the last in-range local row / column of the region (row < M, col < N here)
        self.last_r, self.last_c = em.new("r"), em.new("r")
        em.put(I.binary("sub", "u32", self.last_r, g.M, g.row),
               I.binary("sub", "u32", self.last_r, self.last_r, 1),
               I.binary("sub", "u32", self.last_c, g.N, g.col),
               I.binary("sub", "u32", self.last_c, self.last_c, 1))

    def _form(self, desc):
        return fp8_form(desc, 32)

    # ---- coordinates ----------------------------------------------------------------------
    def _local(self, base: str, delta: int, last: str) -> tuple[str, str]:
        """(min(base + delta, last), base + delta <= last) for a lane-local index (selp:
        the CPU interpreter has no min)."""
        em = self.em
        v, ok = em.new("r"), em.new("p")
        em.put(I.binary("add", "u32", v, base, delta), I.setp("le", "u32", ok, v, last),
               I.selp("u32", v, v, last, ok))
        return v, ok

    def _rows(self) -> tuple[list[str], list[str]]:
        """(clamped global rows gid + 8h + 16i in order i, h: A's rows and the
        accumulators'; whether each is in range)."""
        rows, oks = [], []
        for i in range(self.gm):
            for h in (0, 1):
                v, ok = self._local(self.lane.gid, 16 * i + 8 * h, self.last_r)
                rows.append(self._global(self.g.row, v))
                oks.append(ok)
        return rows, oks

    def _global(self, origin: str, local: str) -> str:
        r = self.em.new("r")
        self.em.put(I.binary("add", "u32", r, origin, local))
        return r

    def _line_ptrs(self, m: Mat, lines: list[str], along_row: bool) -> list[str]:
        """64-bit addresses of element (line, 0) (A rows) or (0, line) (B columns)."""
        return [add_addr(self.em, m.base, scale_bytes(self.em, linear(
            self.em, offset_terms(m, ln, 0) if along_row else offset_terms(m, 0, ln)),
            m.bits)) for ln in lines]

    # ---- the whole region -----------------------------------------------------------------
    def run(self, scale, fused) -> None:
        em, g = self.em, self.g
        rows, _ = self._rows()
        cols = [self._global(g.col, self._local(self.lane.gid, TILE_N * j, self.last_c)[0])
                for j in range(self.gn)]
        lane_off = em.new("rd")                   # a lane's 16 bytes of a step: 16 tig
        em.put(I.binary("mul.wide", "u32", lane_off, self.lane.tig, 16))
        self.qs = [add_addr(em, p, lane_off) for p in
                   self._line_ptrs(g.A, rows, True) + self._line_ptrs(g.B, cols, False)]
        self.na = 2 * self.gm
        self.acc = [[[em.new("f") for _ in range(4)] for _ in range(self.gn)]
                    for _ in range(self.gm)]
        for t in (r for row in self.acc for sub in row for r in sub):
            em.put(I.mov("f32", t, self.ZERO))
        steps = em.new("r")
        em.put(I.binary("shr", "u32", steps, g.K, 6 - self.ELEM_SHIFT))
        tail = label(em, "f8s_tail")
        self.x, self.y = self._buffer(), self._buffer()
        self._by_width(steps, tail)
        em.put(I.label(tail))
        self._tail(steps)
        self._epilogue(scale, fused)

    def _by_width(self, steps: str, tail: str) -> None:
        """The main loop in the widest load form the run-time alignment allows."""
        em, g = self.em, self.g
        bits, none = em.new("rd"), em.new("p")
        em.put(I.setp("eq", "u32", none, steps, 0), I.bra(tail, guard=none, uniform=True),
               I.binary("or", "b64", bits, g.A.base, g.B.base))
        for ld in (g.A.ld, g.B.ld):                 # in bytes: << ELEM_SHIFT
            if isinstance(ld, int):
                em.put(I.binary("or", "b64", bits, bits, ld << self.ELEM_SHIFT))
            else:
                w = em.new("rd")
                em.put(I.cvt("u64", "u32", w, ld))
                if self.ELEM_SHIFT:
                    em.put(I.binary("shl", "b64", w, w, self.ELEM_SHIFT))
                em.put(I.binary("or", "b64", bits, bits, w))
        widths = self.WIDTHS
        names = [label(em, f"f8s_w{w}") for w in widths]
        for w, name in zip(widths[:-1], names):
            low, ok = em.new("rd"), em.new("p")
            em.put(I.binary("and", "b64", low, bits, w - 1), I.setp("eq", "u64", ok, low, 0),
                   I.bra(name, guard=ok, uniform=True))
        em.put(I.bra(names[-1], uniform=True))
        for w, name in zip(widths, names):
            em.put(I.label(name))
            self._main_loop(w, steps)
            em.put(I.bra(tail, uniform=True))

    # ---- the main loop --------------------------------------------------------------------
    def _load_line(self, w: int, space: str, q: str, words: list[str]) -> None:
        """A lane's 16 contiguous bytes of one line (A row or B column) of a step into
        words[0..3], in loads of `w` bytes. k32: words[2c + s] feeds MMA c of the step as
        the fragment register of K half s (PTX ISA m16n8k32 map: register half s of lane
        (gid, tig) holds k = 4 tig + 16 s + 0..3; here bytes 16 tig + 8 c + 4 s + 0..3);
        k16 (sm_90): words[c] feeds MMA c (_f16_chunk). The MMA's K index is permuted the
        same way for A and B."""
        em = self.em
        if w == 16:
            em.put(I.ld_vec(space, "b32", I.vec(*words), I.mem(q)))
        elif w == 8:
            for h in (0, 1):
                em.put(I.ld_vec(space, "b32", I.vec(*words[2 * h:2 * h + 2]), I.mem(q, 8 * h)))
        elif w == 4:
            for s, dst in enumerate(words):
                em.put(I.ld(space, "b32", dst, I.mem(q, 4 * s)))
        else:
            per = 4 >> self.ELEM_SHIFT                 # elements per word
            for s, dst in enumerate(words):
                parts = [em.new("r") for _ in range(per)]
                for b, r in enumerate(parts):
                    em.put(I.ld(space, self.NARROW, r, I.mem(q, 4 * s + (b << self.ELEM_SHIFT))))
                self._pack(dst, parts)

    def _pack(self, dst: str, parts: list[str]) -> None:
        _pack4(self.em, dst, parts)

    def _buffer(self) -> list[list[str]]:
        return [[self.em.new("r") for _ in range(4)] for _ in self.qs]

    def _load_step(self, w: int, buf: list[list[str]]) -> None:
        for i, (q, words) in enumerate(zip(self.qs, buf)):
            self._load_line(w, self._space(i), q, words)
        for q in self.qs:
            self.em.put(I.binary("add", "s64", q, q, STEP))

    def _space(self, line: int) -> str:
        return (self.g.A if line < self.na else self.g.B).space

    def _mma_step(self, buf: list[list[str]]) -> None:
        """A step's MMAs for every (m16, n8) tile: two FP8 k32, or four f16 k16 (sm_90)."""
        if self.f16:
            for c in range(4):
                self._f16_chunk(buf[:self.na], buf[self.na:], c)
            return
        for c in (0, 1):
            self._mma_chunk(buf[:self.na], buf[self.na:], c)

    def _f16_chunk(self, a_lines, b_lines, c: int) -> None:
        """Word c of every line, decoded exactly to f16 pairs (cvt.rn.f16x2.<fmt>x2), as an
        m16n8k16 f16 MMA: the low byte pair of a lane's word is K slots 2 tig, 2 tig + 1,
        the high pair 2 tig + 8, 2 tig + 9 (PTX ISA m16n8k16 A/B maps), for A and B alike."""
        em, desc = self.em, self.g.desc

        def halves(word: str, fmt: str) -> list[str]:
            lo, hi = em.new("rs"), em.new("rs")
            em.put(I.mov("b32", I.vec(lo, hi), word))
            out = []
            for h in (lo, hi):
                r = em.new("r")
                em.put(I.cvt("f16x2", f"{fmt}x2", r, h, rounding="rn"))
                out.append(r)
            return out
        bs = [halves(line[c], desc.b_type) for line in b_lines]
        for i in range(self.gm):
            lo, hi = halves(a_lines[2 * i][c], desc.a_type), \
                halves(a_lines[2 * i + 1][c], desc.a_type)
            a = [lo[0], hi[0], lo[1], hi[1]]
            for j in range(self.gn):
                acc = self.acc[i][j]
                em.put(I.mma_sync(F16_HEAD, acc, a, bs[j], acc))

    def _mma_chunk(self, a_lines, b_lines, c: int) -> None:
        em = self.em
        for i in range(self.gm):
            lo, hi = a_lines[2 * i], a_lines[2 * i + 1]
            a = [lo[2 * c], hi[2 * c], lo[2 * c + 1], hi[2 * c + 1]]
            for j in range(self.gn):
                b = [b_lines[j][2 * c], b_lines[j][2 * c + 1]]
                acc = self.acc[i][j]
                em.put(I.mma_sync(self.form.head, acc, a, b, acc))

    def _main_loop(self, w: int, steps: str) -> None:
        """`steps` (>= 1) K steps through two register buffers X and Y: the loads of step
        n + 1 are issued before the MMAs of step n (single bytes: one buffer)."""
        em, x, y = self.em, self.x, self.y
        left, done = em.new("r"), em.new("p")
        if w == 1:                  # single bytes: 4x the loads; one buffer, no prefetch
            top = label(em, "f8s_loop1_")
            em.put(I.mov("u32", left, steps), I.label(top))
            self._load_step(w, x)
            self._mma_step(x)
            em.put(I.binary("sub", "u32", left, left, 1), I.setp("ne", "u32", done, left, 0),
                   I.bra(top, guard=done, uniform=True))
            return
        top, last_x, last_y, out = (label(em, f"f8s_{s}{w}_")
                                    for s in ("loop", "lastx", "lasty", "out"))
        em.put(I.mov("u32", left, steps))
        self._load_step(w, x)
        em.put(I.label(top))
        for cur, nxt, last in ((x, y, last_x), (y, x, last_y)):
            em.put(I.binary("sub", "u32", left, left, 1), I.setp("eq", "u32", done, left, 0),
                   I.bra(last, guard=done, uniform=True))
            self._load_step(w, nxt)
            self._mma_step(cur)
        em.put(I.bra(top, uniform=True), I.label(last_x))
        self._mma_step(x)
        em.put(I.bra(out, uniform=True), I.label(last_y))
        self._mma_step(y)
        em.put(I.label(out))

    # ---- the K remainder ------------------------------------------------------------------
    def _tail(self, steps: str) -> None:
        """The last K mod STEP bytes (if any) as one more step of per-element loads, each
        predicated on q < K and zero-filled (+0 * +0 adds nothing); nothing past K is
        read. The pointers already stand at K step `steps`. A run-time loop of four trips
        loads one word of every line per trip (the words shift down one place a trip), so
        few element registers are live at once."""
        em, g, es = self.em, self.g, self.ELEM_SHIFT
        per = 4 >> es                                      # elements per word
        kdone, rem, none = em.new("r"), em.new("r"), em.new("p")
        end, top = label(em, "f8s_kend"), label(em, "f8s_kword")
        em.put(I.binary("shl", "b32", kdone, steps, 6 - es),
               I.setp("ge", "u32", none, kdone, g.K),
               I.bra(end, guard=none, uniform=True),
               I.mad("lo", "u32", kdone, self.lane.tig, 16 >> es, kdone),
               I.binary("sub", "u32", rem, g.K, kdone))   # elements from this lane's first on
        trip, more = em.new("r"), em.new("p")
        for r in (r for words in self.x for r in words[1:]):   # defined before they shift
            em.put(I.mov("b32", r, 0))
        em.put(I.mov("u32", trip, 4), I.label(top))
        preds = []
        for b in range(per):
            p = em.new("p")
            em.put(I.setp("gt", "s32", p, rem, b))
            preds.append(p)
        for i, (q, words) in enumerate(zip(self.qs, self.x)):
            for s in range(3):
                em.put(I.mov("b32", words[s], words[s + 1]))
            parts = [em.new("r") for _ in range(per)]
            for b, r in enumerate(parts):
                em.put(I.mov("u32", r, 0), I.ld(self._space(i), self.NARROW, r,
                                                I.mem(q, b << es), guard=preds[b]))
            self._pack(words[3], parts)
            em.put(I.binary("add", "s64", q, q, 4))
        em.put(I.binary("sub", "u32", rem, rem, per), I.binary("sub", "u32", trip, trip, 1),
               I.setp("ne", "u32", more, trip, 0), I.bra(top, guard=more, uniform=True))
        self._mma_step(self.x)
        em.put(I.label(end))

    # ---- combination, epilogue, store -----------------------------------------------------
    def _epilogue(self, scale, fused) -> None:
        """Per accumulator: t = combine(S, s, C), the fused epilogue, D's rounding and the
        store. C's load and D's store are predicated on the element being in range and
        addressed through the m16n8 accumulator map (mma_sync.acc_offsets: immediate
        offsets from one lane base for row-major C/D); a bias is read at the clamped
        coordinates, always in bounds."""
        from .wgmma_fp8 import combine               # (wgmma_fp8 imports this module)
        em, g, lane = self.em, self.g, self.lane
        grid = (self.gm, self.gn)
        cbase, coffs = acc_offsets(em, lane, add_origin(em, g.C, g.row, g.col), grid)
        dbase, doffs = acc_offsets(em, lane, add_origin(em, g.D, g.row, g.col), grid)
        tig2 = em.new("r")
        em.put(I.binary("shl", "b32", tig2, lane.tig, 1))
        rows = [self._local(lane.gid, 16 * i + 8 * h, self.last_r)
                for i in range(self.gm) for h in (0, 1)]
        cols = [self._local(tig2, TILE_N * j + e, self.last_c)
                for j in range(self.gn) for e in (0, 1)]
        at = None
        if fused is not None and fused.bias is not None:
            at = ([self._global(g.row, r) for r, _ in rows], [self._global(g.col, c)
                                                              for c, _ in cols])
        for i in range(self.gm):
            for j in range(self.gn):
                for e, t in enumerate(self.acc[i][j]):
                    ri, ci = 2 * i + (e >> 1), 2 * j + (e & 1)
                    ok, c = em.new("p"), em.new("f")
                    em.put(I.binary("and", "pred", ok, rows[ri][1], cols[ci][1]),
                           I.mov("f32", c, "0f00000000"),
                           I.ld(g.C.space, "f32", c, I.mem(add_addr(em, cbase, coffs[i][j][e])),
                                guard=ok))
                    combine(em, t, scale, c)
                    if fused is not None:
                        fused.apply_at(em, t, *(at[0][ri], at[1][ci]) if at else (g.row, g.col))
                    self._store(add_addr(em, dbase, doffs[i][j][e]), t, ok)

    def _store(self, addr: str, t: str, ok: str) -> None:
        em, fmt, D = self.em, self.g.desc.result_type, self.g.D
        if fmt == "f32":
            em.put(I.guarded(I.st(D.space, "f32", I.mem(addr), t), ok))
            return
        h = em.new("rs")                   # sm_89+ (mma.fp8.k32) has cvt.rn.{f16,bf16}.f32
        em.put(I.cvt(fmt, "f32", h, t, rounding="rn"),
               I.guarded(I.st(D.space, "b16", I.mem(addr), h), ok))


def _pack4(em, dst: str, parts: list[str]) -> None:
    """dst = the low bytes of parts[0..3], parts[0] least significant (frag._pack)."""
    lo, hi = em.new("r"), em.new("r")
    em.put(I.prmt(lo, parts[0], parts[1], "0x3340"), I.prmt(hi, parts[2], parts[3], "0x3340"),
           I.prmt(dst, lo, hi, "0x5410"))
