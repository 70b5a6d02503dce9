"""Register-resident tile values (docs/internals/tile-frag.md): the lowering used when the
layout plan (tile_plan.py) puts a kernel's tiles in the m16n8 MMA fragment layout.

Geometry, for a block of W work-items (warps = W / 32 subgroups), lane l, g = l / 4,
t = l % 4: an R-row tile is cut in 16-row slabs; warp w owns slabs w, w + warps, ...
(S = R / (16 * warps) of them, index k). Per thread:

- an f32 fragment tile R x C holds, for each owned slab k and 8-column block j, the four
  accumulator values (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1): register
  (k * C/8 + j) * 4 + e;
- a 16-bit fragment tile holds the same positions as packed pairs, word (k * C/8 + j) * 2
  + h for row g + 8h: words (2kc, 0), (2kc, 1), (2kc + 1, 0), (2kc + 1, 1) are exactly the
  A fragment of k-chunk kc, so a converted P feeds the next matmul with no data movement;
- a row vector R x 1 holds its rows g and g + 8 of each owned slab: register 2k + h;
- a shared tile is a workgroup array whose contiguous dimension (the one the global rows
  run along) is padded by 8 elements, so ldmatrix reads are free of bank conflicts (in
  the wgmma form, tile_wgmma.py: swizzled rows a wgmma descriptor describes).

Every elementwise operation is per register with the replay's scalar code (same bits);
row max/sum reduce in-thread over the thread's columns in increasing order and then
across the quad with butterfly shuffles 1 and 2, which is the canonical row-sum order of
tiles.md; masks compare precomputed row and column terms; a matmul is mma.sync with B
fragments from ldmatrix.
"""
from __future__ import annotations

from ..ir.async_groups import balance_groups
from ..ir.module import Const, const_int
from ..ir.types import BOOL, F32, I32, I64, U16, U32, U64, VOID, VectorType
from .tile_plan import PAD, SWIZZLE_ALIGN, plan_tiles
from .tile_replay import NEG_ZERO, TileType, TileVal
from .tile_wgmma import TileWgmmaMixin

_VEC4F = VectorType(F32, 4)
_VEC4U = VectorType(U32, 4)


def _tree(op, xs: list):
    """op over xs as a balanced tree: neighbours pair up level by level."""
    while len(xs) > 1:
        xs = [op(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i]
              for i in range(0, len(xs), 2)]
    return xs[0]


def _known_f32(v) -> float | None:
    """The value of an f32 constant, else None."""
    if isinstance(v, Const) and v.type == F32 and isinstance(v.value, float):
        return v.value
    return None


def _whole_chunks(i0, ibound, inner: int) -> str | None:
    """Whether each 8-element chunk at i0 + 8c (c < inner / 8) is statically all inside or
    all outside [0, ibound): "all" (every chunk inside), "some" (a per-thread test), or
    None (a chunk may be cut: the copies need a source size)."""
    a, z = const_int(i0), const_int(ibound)
    if a is None or z is None or a < 0 or z < 0:
        return None
    if z - a >= inner:
        return "all"
    return "some" if (z - a) % 8 == 0 or z <= a else None


class SharedHome:
    """A shared tile variable's workgroup array: element (outer, inner) at
    outer * stride + inner, outer = the tile's columns when `col` (else its rows); with
    `swizzle` (the wgmma form) at tile_wgmma.swizzled's place instead."""

    def __init__(self, ptr, tt: TileType, col: bool, swizzle: int = 0):
        self.ptr, self.col, self.swizzle = ptr, col, swizzle
        self.outer, self.inner = (tt.columns, tt.rows) if col else (tt.rows, tt.columns)
        self.stride = self.inner + PAD


class FragVar:
    """The storage of a tile variable in the fragment form: IR locals (one per register)
    or a shared home."""

    def __init__(self, home: str, locals_=None, shared: SharedHome | None = None):
        self.home, self.locals, self.shared = home, locals_ or [], shared


class FragVal(TileVal):
    def __init__(self, type: TileType, home: str, regs, shared: SharedHome | None = None):
        super().__init__(type, None, True)
        self.home, self.regs, self.shared = home, regs, shared


class TileFragMixin(TileWgmmaMixin):
    # ---------------------------------------------------------------- the plan
    def _tile_fast(self) -> bool:
        plan = self.__dict__.get("_tplan")
        if plan is None:
            plan = self._tplan = plan_tiles(self, self.decl.body)
            self._tile_clean = None         # the IR block of the last barrier, no read since
            self._tile_synced: set[int] = set()     # tile_load calls that waited for all
            if plan.fast and plan.wgmma:
                text = self._wg_remark(plan)
            elif plan.fast:
                shared = ", ".join(f"`{n}`" for n in plan.shared) or "none"
                text = ("tile values held in registers in the mma fragment layout "
                        f"({plan.warps} subgroups); shared tiles (workgroup memory, "
                        f"ldmatrix): {shared}")
                if plan.wgmma_why:
                    text += f"; not on wgmma: {plan.wgmma_why}"
            else:
                text = f"tile values replay (distributed layout): {plan.why}"
            self.ctx.module.remarks.add(self.fn, self.decl.span, "tile-layout", text)
        return plan.fast

    def _tile_arena(self, span):
        """The dynamic workgroup memory the plan's tiles live in (a u16 pointer, in the
        entry block), after the kernel's check that the launch gave enough of it."""
        arena = self.__dict__.get("_arena")
        if arena is None:
            b = self.b
            self._hoisted(b.emit("tile.need_shared", VOID, [],
                                 {"bytes": self._tplan.dynamic}, span=span))
            arena = self._arena = self._hoisted(      # (before the check: both at entry)
                b.dynamic_shared(U16, "tiles", span=span, align=SWIZZLE_ALIGN))
        return arena

    def tile_finish(self) -> None:
        """Every return of a kernel with shared tiles first waits for its copies: a load
        whose tile is never read again (a prefetch past the last block) leaves a group in
        flight, and a kernel exits with none (ir/async_groups.py)."""
        plan = self.__dict__.get("_tplan")
        if plan is None or not plan.fast or not plan.shared:
            return
        b, here = self.b, self.b.block

        def wait_before_end(block, pending: int) -> None:
            term = block.instrs.pop()
            b.position_at_end(block)
            b.async_wait(pending, span=term.span)
            block.instrs.append(term)
        for block in self.fn.blocks:
            term = block.terminator
            if term is not None and term.op == "ret":
                wait_before_end(block, 0)
        # the plan's waits assume the copy groups in flight agree where paths join; a load
        # issued on one path and not waited for (a loop's prefetch the loop never reads)
        # breaks that, so the busier path waits down to the other's count
        if not any(i.op == "async.copy" for i in self.fn.instructions()):
            balance_groups(self.fn, wait_before_end)
        if here is not None:
            b.position_at_end(here)

    def _geo(self, span):
        """(warp, lane, g, t) of this work-item, u32."""
        b, c = self.b, self._c32
        tid = self._tid(span)
        lane = b.rem(tid, c(32))
        return b.div(tid, c(32)), lane, b.div(lane, c(4)), b.rem(lane, c(4))

    def _nregs(self, tt: TileType) -> int:
        slabs = tt.rows // (16 * self._tplan.warps)
        if tt.columns == 1:
            return 2 * slabs
        return slabs * tt.columns // 8 * (4 if tt.format == "f32" else 2)

    def _slab_rows(self, tt: TileType, span):
        """[(k, h, row within the tile as u32)] of this thread's rows."""
        b, c = self.b, self._c32
        warp, _, g, _ = self._geo(span)
        warps = self._tplan.warps
        out = []
        for k in range(tt.rows // (16 * warps)):
            base = b.add(b.mul(b.add(warp, c(warps * k)), c(16)), g)
            out += [(k, 0, base), (k, 1, b.add(base, c(8)))]
        return out

    def _frag_cols(self, tt: TileType, span):
        """[(j, p, column as u32)] of this thread's columns 8j + 2t + p."""
        b, c = self.b, self._c32
        _, _, _, t = self._geo(span)
        t2 = b.mul(t, c(2))
        return [(j, p, b.add(t2, c(8 * j + p))) for j in range(tt.columns // 8)
                for p in (0, 1)]

    # ---------------------------------------------------------------- variables
    def _frag_decl(self, d, tt: TileType, sym) -> None:
        plan = self._tplan
        if d.name in plan.shared:
            spec = plan.shared[d.name]
            col, inner = spec.col, spec.inner
            if plan.dynamic:        # past 48 KiB: a fixed place in the dynamic arena
                p = self._at(self._tile_arena(d.span), self._c32(plan.offsets[d.name] // 2))
            elif spec.swizzle:      # the wgmma form: no padding, a swizzle-aligned base
                p = self._hoisted(self.b.gpu_alloc("workgroup", U16, tt.count,
                                                   f"tile.{d.name}", span=d.span,
                                                   align=SWIZZLE_ALIGN))
            else:
                p = self._hoisted(self.b.gpu_alloc(
                    "workgroup", U16, (tt.count // inner) * (inner + PAD), f"tile.{d.name}",
                    span=d.span))
            home = SharedHome(p, tt, col, spec.swizzle)
            sym.storage = FragVar("shared", shared=home)
            if d.init is None:
                sym.needs_init = True
            else:
                self._shared_assign(home, tt, d.init, d.span)
            return
        home = "row" if tt.columns == 1 else "frag"
        rtype = F32 if tt.format == "f32" else U32
        locs = [self.b.local(self.fn, rtype, f"tile.{d.name}") for _ in range(self._nregs(tt))]
        sym.storage = FragVar(home, locs)
        if d.init is None:
            sym.needs_init = True
            return
        v = self.tile_value(d.init, tt)
        self._same_type(v, tt, d.init.span)
        self._uniform("tile assignment", d.span, [])
        for loc, r in zip(locs, v.regs):
            self.b.local_set(loc, r)

    def _frag_assign(self, sym, value, span) -> None:
        var: FragVar = sym.storage
        if var.home == "shared":
            self._shared_assign(var.shared, sym.type, value, span)
        else:
            v = self.tile_value(value, sym.type)
            self._same_type(v, sym.type, value.span)
            self._uniform("tile assignment", span, [])
            for loc, r in zip(var.locals, v.regs):
                self.b.local_set(loc, r)
        self._mark(sym)

    def _shared_assign(self, home: SharedHome, tt: TileType, value, span) -> None:
        self.kernel_only("`tile_load`", value.span)
        self._tile_call = value
        self._load(value, tt, into=home)
        self._uniform("tile assignment", span, [])

    def _frag_read(self, sym) -> FragVal:
        var: FragVar = sym.storage
        if var.home == "shared":
            return FragVal(sym.type, "shared", [], var.shared)
        return FragVal(sym.type, var.home, [self.b.local_get(x) for x in var.locals])

    # ---------------------------------------------------------------- elementwise
    def _frag_elem(self, o, rt: TileType, i: int):
        if not isinstance(o, FragVal):
            return o
        if o.type == rt or rt.columns == 1:
            return o.regs[i]
        nb = rt.columns // 8                       # a row vector broadcast over a fragment
        return o.regs[2 * (i // (4 * nb)) + (i % 4) // 2]

    def _frag_elementwise(self, op: str, ops, rt: TileType) -> FragVal:
        if op == "mul" and rt.columns > 1 and getattr(self.ctx, "tile_rescale_skip", True):
            tiles = [o for o in ops if isinstance(o, FragVal)]
            rows = [o for o in tiles if o.type.columns == 1]
            if len(tiles) == 2 and len(rows) == 1:
                whole = tiles[0] if rows[0] is tiles[1] else tiles[1]
                return self._frag_row_scale(whole, rows[0], rt)
        regs = [self._scalar_op(op, [self._frag_elem(o, rt, i) for o in ops])
                for i in range(self._nregs(rt))]
        return FragVal(rt, "row" if rt.columns == 1 else "frag", regs)

    def _frag_row_scale(self, a: FragVal, f: FragVal, rt: TileType) -> FragVal:
        """a * f for row vector f (--gpu-tile-rescale-skip=on): the multiplies run only in
        subgroups where some factor is not exactly 1 (a branch on `subgroup.any`). x * 1
        is x for every x but a NaN, whose payload tiles.md leaves open, so the bits are
        the multiply's. Online softmax rescales its accumulator by exp2(m_old - m_new),
        exactly 1 in every row whose maximum did not move: most key blocks of a long row."""
        b = self.b
        one = b.const(F32, 1.0)
        moved = _tree(lambda x, y: b.binop("or", x, y),
                      [b.cmp("ne", v, one) for v in f.regs])
        slots = [b.local(self.fn, F32, "tile.scaled") for _ in a.regs]
        for slot, v in zip(slots, a.regs):
            b.local_set(slot, v)

        def scale() -> None:
            for i, slot in enumerate(slots):
                b.local_set(slot, self._scalar_op("mul", [a.regs[i], self._frag_elem(f, rt, i)]))
        self._if(b.subgroup("any", BOOL, [moved]), scale)
        return FragVal(rt, "frag", [b.local_get(s) for s in slots])

    def _pack(self, lo, hi, fmt: str):
        return self.b.emit("tile.pack", U32, [lo, hi], {"format": fmt})

    def _frag_fill(self, x, rt: TileType) -> FragVal:
        v = x if rt.format == "f32" else self._pack(x, x, rt.format)
        return FragVal(rt, "row" if rt.columns == 1 else "frag", [v] * self._nregs(rt))

    def _halves(self, word):
        b = self.b
        lo = b.convert(b.binop("and", word, self._c32(0xFFFF)), U16)
        hi = b.convert(b.binop("shr", word, self._c32(16)), U16)
        return lo, hi

    def _frag_convert(self, a: FragVal, rt: TileType) -> FragVal:
        src, dst = a.type.format, rt.format
        if src == dst:
            return FragVal(rt, a.home, a.regs)
        if src == "f32":
            regs = [self._pack(a.regs[2 * w], a.regs[2 * w + 1], dst)
                    for w in range(len(a.regs) // 2)]
            return FragVal(rt, "frag", regs)
        wide = []
        for word in a.regs:
            wide += [self._widen(h, src) for h in self._halves(word)]
        if dst == "f32":
            return FragVal(rt, "frag", wide)
        return FragVal(rt, "frag", [self._pack(wide[2 * w], wide[2 * w + 1], dst)
                                    for w in range(len(wide) // 2)])

    # ---------------------------------------------------------------- mask
    def _frag_mask(self, a: FragVal, ctl, fill, diag, span) -> FragVal:
        b, c32 = self.b, self._c32
        tt = a.type
        u = lambda v: b.convert(v, U64)     # noqa: E731
        s = lambda v: b.convert(v, I64)     # noqa: E731
        warp, _, g, t = self._geo(span)
        warps, nb = self._tplan.warps, tt.columns // 8
        # every test is a per-element constant against a per-thread limit (all i64):
        # row + 16(warp + warps k) + g + 8h >= rows  <=>  16 warps k + 8h >= rows - row - r0
        # column + 8j + 2t + p >= columns            <=>  8j + p >= columns - column - 2t
        # (column + 8j + 2t + p) - (row + r0 + 16 warps k + 8h) > d
        #                     <=>  8j + p - 16 warps k - 8h > d - (column - row) - (2t - r0)
        r0 = s(b.add(g, b.mul(warp, c32(16))))
        t2 = s(b.mul(t, c32(2)))
        row_lim = b.sub(b.sub(s(u(ctl["rows"])), s(u(ctl["row"]))), r0)
        col_lim = b.sub(b.sub(s(u(ctl["columns"])), s(u(ctl["column"]))), t2)
        limits = {}
        if diag:
            lane_term = b.sub(t2, r0)
            origin = b.sub(s(u(ctl["column"])), s(u(ctl["row"])))
            for key, d in diag.items():
                limits[key] = b.sub(b.sub(s(d), origin), lane_term)
        # the constants are below 2^12 in magnitude: limits clamped to +-2^20 compare the
        # same in 32 bits
        def narrow(v):
            lo, hi = b.const(I64, -(1 << 20)), b.const(I64, 1 << 20)
            v = b.select(b.cmp("lt", v, lo), lo, v)
            return b.convert(b.select(b.cmp("gt", v, hi), hi, v), I32)
        row_lim, col_lim = narrow(row_lim), narrow(col_lim)
        limits = {key: narrow(v) for key, v in limits.items()}
        row_off = {(k, h): b.cmp("le", row_lim, b.const(I32, 16 * warps * k + 8 * h))
                   for k in range(len(a.regs) // (4 * nb)) for h in (0, 1)}
        col_off = {(j, p): b.cmp("le", col_lim, b.const(I32, 8 * j + p))
                   for j in range(nb) for p in (0, 1)}
        regs = []
        for i, x in enumerate(a.regs):
            k, rest = divmod(i, 4 * nb)
            j, e = divmod(rest, 4)
            h, p = divmod(e, 2)
            off = b.binop("or", row_off[k, h], col_off[j, p])
            const = b.const(I32, 8 * j + p - 16 * warps * k - 8 * h)
            if "upper" in limits:
                off = b.binop("or", off, b.cmp("lt", limits["upper"], const))
            if "lower" in limits:
                off = b.binop("or", off, b.cmp("lt", const, limits["lower"]))
            regs.append(b.select(off, fill, x))
        return FragVal(tt, "frag", regs)

    # ---------------------------------------------------------------- reductions
    def _bfly(self, v, lanes: int):
        return self.b.emit("tile.bfly", v.type, [v], {"lanes": lanes})

    def _max_run(self, xs):
        """maximumNumber of xs with one max.f32 (NaN-ignoring) and one unsigned min per
        element (_max_pair), the sign of a zero fixed once at the end (_max_fix)."""
        return self._max_fix(*self._max_pair(xs))

    def _max_pair(self, xs):
        """(max.f32 of xs, unsigned min of their bits): when the max is a zero, it is +0
        exactly when some element has the bits of +0, the smallest unsigned pattern. Both
        halves are associative and commutative, so they reduce as trees (a dependency
        chain of log2 n, not n) and pairs combine in any order (the butterflies)."""
        return self._max_tree(xs), self._low_bits(xs)

    def _max_tree(self, xs):
        b = self.b
        return _tree(lambda x, y: b.binop("max", x, y), list(xs))

    def _low_bits(self, xs):
        b = self.b
        return _tree(lambda x, y: b.binop("min", x, y), [self._bits(x) for x in xs])

    def _max_fix(self, v, low):
        b = self.b
        zero = b.select(b.cmp("eq", low, self._c32(0)), b.const(F32, 0.0),
                        b.const(F32, NEG_ZERO))
        return b.select(b.cmp("eq", v, b.const(F32, 0.0)), zero, v)

    def _maxnum(self, x, y, is_max: bool):
        """maximumNumber/minimumNumber of register tiles (PTX profiles with the warp MMA),
        where max.f32/min.f32 drop a NaN operand and leave only the sign of a zero result
        open: against a constant that is not a zero (nor NaN) no zero can tie, so the
        instruction alone is exact; a max otherwise fixes the zero's sign as _max_pair
        does."""
        plan = self.__dict__.get("_tplan")
        if plan is None or not plan.fast:       # the replay's portable selects
            return super()._maxnum(x, y, is_max)
        b = self.b
        for c, other in ((y, x), (x, y)):
            k = _known_f32(c)
            if k is not None and k == k and k != 0.0:
                return b.binop("max" if is_max else "min", other, c)
        if not is_max:
            return super()._maxnum(x, y, is_max)
        return self._max_fix(*self._max_pair([x, y]))

    def _frag_reduce(self, op: str, a: FragVal, rt: TileType) -> FragVal:
        if a.home == "row":
            return FragVal(rt, "row", a.regs)
        nb = a.type.columns // 8
        rows = [[a.regs[(k * nb + j) * 4 + 2 * h + p] for j in range(nb) for p in (0, 1)]
                for k in range(len(a.regs) // (4 * nb)) for h in (0, 1)]
        if op == "max":
            return FragVal(rt, "row", self._row_maxes(rows))
        out = []
        for xs in rows:                 # canonical order: this lane's class, then the quad
            v = self._rn("add", xs[0], xs[1])
            for x in xs[2:]:
                v = self._rn("add", v, x)
            for lanes in (1, 2):
                v = self._rn("add", v, self._bfly(v, lanes))
            out.append(v)
        return FragVal(rt, "row", out)

    def _row_maxes(self, rows) -> list:
        """maximumNumber of each row (this lane's elements xs, then the quad's
        butterflies). max.f32 alone leaves only the sign of a zero maximum open, and that
        is +0 exactly when some element has the bits of +0 (_max_pair's unsigned minima).
        A zero maximum is rare (it needs every element <= 0), so the minima and their
        butterflies run only when some lane of the subgroup has one: a branch on
        `subgroup.any`, uniform in the subgroup, which keeps about one instruction per
        element (and two shuffles per row) out of every row maximum."""
        b = self.b
        vs = []
        for xs in rows:
            v = self._max_tree(xs)
            for lanes in (1, 2):
                v = b.binop("max", v, self._bfly(v, lanes))
            vs.append(v)
        zero = _tree(lambda x, y: b.binop("or", x, y),
                     [b.cmp("eq", v, b.const(F32, 0.0)) for v in vs])
        slots = [b.local(self.fn, F32, "tile.rowmax") for _ in vs]
        for slot, v in zip(slots, vs):
            b.local_set(slot, v)

        def settle_signs() -> None:
            for slot, v, xs in zip(slots, vs, rows):
                low = self._low_bits(xs)
                for lanes in (1, 2):
                    low = b.binop("min", low, self._bfly(low, lanes))
                b.local_set(slot, self._max_fix(v, low))
        self._if(b.subgroup("any", BOOL, [zero]), settle_signs)
        return [b.local_get(slot) for slot in slots]

    # ---------------------------------------------------------------- loads and stores
    def _frag_sites(self, base, ctl, ld, col: bool, tt: TileType, span):
        """site(k, h, j, p) -> (in range, element pointer) of this thread's element in row
        g + 8h of slab k, column 8j + 2t + p. Row-major regions use one pointer per row
        and constant offsets, so each access is `[row pointer + immediate]`."""
        b, c32 = self.b, self._c32
        u = lambda v: b.convert(v, U64)     # noqa: E731
        rows = self._slab_rows(tt, span)
        cols = {(j, p): c for j, p, c in self._frag_cols(tt, span)} if tt.columns > 1 \
            else {(0, 0): c32(0)}
        if col or tt.columns == 1:
            def general(k, h, j, p):
                ok, idx = self._addresses(ctl, ld, col, rows[2 * k + h][2], cols[j, p])
                return ok, b.ptradd(base, idx)
            return general
        _, _, _, t = self._geo(span)
        col_lim = b.sub(b.sub(b.convert(u(ctl["columns"]), I64), b.convert(u(ctl["column"]),
                                                                          I64)),
                        b.convert(u(b.mul(t, c32(2))), I64))
        per_row = {}
        for k, h, r in rows:
            rg = b.add(u(ctl["row"]), u(r))
            first = b.add(b.add(b.mul(rg, u(ld)), u(ctl["column"])), u(b.mul(t, c32(2))))
            per_row[k, h] = (b.cmp("lt", rg, u(ctl["rows"])),
                             b.ptradd(base, b.convert(first, I64)))

        def site(k, h, j, p):
            ok_row, ptr_row = per_row[k, h]
            ok = b.binop("and", ok_row, b.cmp("lt", b.const(I64, 8 * j + p), col_lim))
            return ok, b.ptradd(ptr_row, b.const(I64, 8 * j + p))
        return site

    def _frag_load(self, src, ctl, ld, col: bool, rt: TileType, span) -> FragVal:
        b = self.b
        zero = b.const(rt.elem, 0.0 if rt.elem == F32 else 0)
        site = self._frag_sites(src, ctl, ld, col, rt, span)

        def element(k, h, j, p):
            loc = b.local(self.fn, rt.elem, "tile.ld")
            b.local_set(loc, zero)
            ok, at = site(k, h, j, p)
            self._if(ok, lambda: b.local_set(loc, b.load(at)))
            return b.local_get(loc)
        slabs = rt.rows // (16 * self._tplan.warps)
        if rt.columns == 1:
            return FragVal(rt, "row", [element(k, h, 0, 0) for k in range(slabs)
                                       for h in (0, 1)])
        regs = []
        for k in range(slabs):
            for j in range(rt.columns // 8):
                for h in (0, 1):
                    pair = [element(k, h, j, p) for p in (0, 1)]
                    if rt.format == "f32":
                        regs += pair
                    else:
                        lo, hi = (b.convert(x, U32) for x in pair)
                        regs.append(b.binop("or", lo, b.binop("shl", hi, self._c32(16))))
        return FragVal(rt, "frag", regs)

    def _frag_store(self, dst, t: FragVal, ctl, ld, col: bool, span) -> None:
        b = self.b
        tt = t.type
        site = self._frag_sites(dst, ctl, ld, col, tt, span)
        slabs = tt.rows // (16 * self._tplan.warps)

        def element(k, h, j, p, v, extra=None):
            ok, at = site(k, h, j, p)
            if extra is not None:
                ok = b.binop("and", ok, extra)
            self._if(ok, lambda: b.store(at, v))
        if tt.columns == 1:             # the quad holds each row four times: lane t = 0 stores
            _, _, _, t4 = self._geo(span)
            first = b.cmp("eq", t4, self._c32(0))
            for i, v in enumerate(t.regs):
                element(i // 2, i % 2, 0, 0, v, first)
            return
        nb = tt.columns // 8
        for k in range(slabs):
            for j in range(nb):
                for h in (0, 1):
                    if tt.format == "f32":
                        vals = [t.regs[(k * nb + j) * 4 + 2 * h + p] for p in (0, 1)]
                    else:
                        vals = self._halves(t.regs[(k * nb + j) * 2 + h])
                    for p in (0, 1):
                        element(k, h, j, p, vals[p])

    # ---------------------------------------------------------------- shared tiles
    def _wg_barrier(self, span) -> None:
        self._barrier(span)
        self._tile_clean = self.b.block

    def _publish(self, pending: int, span) -> None:
        """Wait until at most `pending` copy groups are in flight, then make the completed
        copies visible to the workgroup (in the wgmma form first to its asynchronous
        proxy: each writer fences before the barrier, docs/internals/tile-wgmma.md)."""
        self.b.async_wait(pending, span=span)
        if self._tplan.wgmma:
            self.b.emit("tile.proxy_fence", VOID, [], span=span)
        self._wg_barrier(span)

    def _sh_index(self, home: SharedHome, o, v):
        """The u32 element index of (outer o, inner v) in the shared tile's array."""
        if home.swizzle:
            return self._swizzled(home, o, v)
        return self.b.add(self.b.mul(o, self._c32(home.stride)), v)

    def _shared_load(self, home: SharedHome, src, ctl, ld, col: bool, span) -> None:
        """Fill a shared tile: 16-byte asynchronous copies of 8 elements along the
        contiguous dimension when the source is global memory and it, ld and the
        contiguous origin are 16-byte aligned (a uniform test), else element by element;
        out-of-range elements are 0."""
        b, c32 = self.b, self._c32
        if self._tile_clean is not b.block:
            # earlier readers of any shared tile are done, and every copy issued so far is
            # complete and visible: a matmul reading a tile loaded before this point needs
            # no wait of its own (FlashAttention-2's two barriers per key block)
            if getattr(self.ctx, "tile_copy_wait", "load") == "matmul":
                # (--gpu-tile-copy-wait=matmul) only the readers are waited for: copies
                # still in flight land while this one is issued, and each matmul waits
                # for its own (tile_plan's counts)
                if self._tplan.wgmma:
                    self.b.emit("tile.proxy_fence", VOID, [], span=span)
                self._wg_barrier(span)
            else:
                self._publish(0, span)
                self._tile_synced.add(id(self._tile_call))
        u = lambda v: b.convert(v, U64)     # noqa: E731
        names = ("column", "row") if col else ("row", "column")
        o0, i0 = u(ctl[names[0]]), u(ctl[names[1]])
        obound, ibound = u(ctl[names[0] + "s"]), u(ctl[names[1] + "s"])
        ld64 = u(ld)
        aligned = b.cmp("eq", b.binop("or", b.binop("or", b.binop(
            "and", b.ptrtoint(src, U64), b.const(U64, 15)), b.binop(
            "and", ld64, b.const(U64, 7))), b.binop("and", i0, b.const(U64, 7))),
            b.const(U64, 0))
        W = self._width(span)
        tid = self._tid(span)
        per_row = home.inner // 8

        def source_bytes(ig):
            """The bytes of the 8-element chunk at inner index ig inside the bound."""
            left = b.sub(b.select(b.cmp("lt", ig, ibound), ibound, ig), ig)
            return b.mul(b.convert(b.select(b.cmp("lt", left, b.const(U64, 8)), left,
                                            b.const(U64, 8)), U32), c32(2))

        def vector():
            chunks = home.outer * per_row
            # a swizzled row's chunks permute with the row's residue mod 8: constant steps
            # need whole 8-row periods between a thread's chunks
            if W % per_row == 0 and (not home.swizzle or (W // per_row) % 8 == 0):
                return strided(chunks)
            for r in range(-(-chunks // W)):
                idx = b.add(tid, c32(r * W))

                def chunk(idx=idx):
                    o, v = b.div(idx, c32(per_row)), b.mul(b.rem(idx, c32(per_row)), c32(8))
                    og, ig = b.add(o0, u(o)), b.add(i0, u(v))
                    if _whole_chunks(i0, ibound, home.inner):
                        outside = b.binop("or", b.cmp("ge", og, obound),
                                          b.cmp("ge", ig, ibound))
                        gidx = b.select(outside, b.const(U64, 0), b.add(b.mul(og, ld64), ig))
                        b.emit("tile.cp16", VOID, [
                            self._at(home.ptr, self._sh_index(home, o, v)),
                            b.ptradd(src, b.convert(gidx, I64)), outside], {"zero_if": True})
                        return
                    inside = b.binop("and", b.cmp("lt", og, obound), b.cmp("lt", ig, ibound))
                    nbytes = b.select(inside, source_bytes(ig), c32(0))
                    gidx = b.select(inside, b.add(b.mul(og, ld64), ig), b.const(U64, 0))
                    g = b.ptradd(src, b.convert(gidx, I64))
                    s = self._at(home.ptr, self._sh_index(home, o, v))
                    b.emit("tile.cp16", VOID, [s, g, nbytes])
                if r * W + W > chunks:
                    self._if(b.cmp("lt", idx, c32(chunks)), chunk)
                else:
                    chunk()

        def strided(chunks):
            """Thread tid copies chunk tid + rW: outer o_t + r R, inner v_t (R = W / per_row),
            so the shared address is a constant step and the global one a fixed stride.
            When every column chunk is inside (statically) and the whole tile's rows are
            too (a uniform test: every block of a key loop but the last), the copies take
            no bound at all: no limit to clamp, no compare a copy."""
            R = W // per_row
            o_t, v_t = b.div(tid, c32(per_row)), b.mul(b.rem(tid, c32(per_row)), c32(8))
            ig = b.add(i0, u(v_t))
            whole = _whole_chunks(i0, ibound, home.inner)
            g = b.ptradd(src, b.convert(b.add(b.mul(b.add(o0, u(o_t)), ld64), ig), I64))
            step = b.convert(b.mul(ld64, b.const(U64, R)), I64)
            sbase = self._at(home.ptr, self._sh_index(home, o_t, v_t))
            # outer rows rR further: a constant step (swizzled: rR rows of one panel)
            row_elems = home.swizzle // 2 if home.swizzle else home.stride

            def copies(copy) -> None:
                """copy(g, r, offset) for each chunk r of this thread."""
                gr = g
                for r in range(-(-chunks // W)):
                    offset = {"offset": 2 * r * R * row_elems}
                    one = (lambda gr=gr, r=r, offset=offset: copy(gr, r, offset))
                    if r * W + W > chunks:
                        self._if(b.cmp("lt", b.add(tid, c32(r * W)), c32(chunks)), one)
                    else:
                        one()
                    gr = b.ptradd(gr, step)

            def bounded() -> None:
                # outer o_t + rR is inside while rR < obound - o0 - o_t, compared in 32
                # bits (rR < 2^31): the limit clamped to [0, 2^31 - 1] once per load
                lim = b.sub(b.sub(b.convert(obound, I64), b.convert(o0, I64)),
                            b.convert(u(o_t), I64))
                lim = b.select(b.cmp("lt", lim, b.const(I64, 0)), b.const(I64, 0), lim)
                lim = b.convert(b.select(b.cmp("gt", lim, b.const(I64, 0x7FFFFFFF)),
                                         b.const(I64, 0x7FFFFFFF), lim), I32)
                if whole:
                    # every chunk is all inside or all outside the columns: zero-fill by a
                    # predicate (one compare a copy, no source size to compute)
                    if whole == "some":
                        lim = b.select(b.cmp("lt", ig, ibound), lim, b.const(I32, 0))

                    def copy(gr, r, offset):
                        # an ignored source is not read (the address may be past the end)
                        outside = b.cmp("ge", b.const(I32, r * R), lim)
                        b.emit("tile.cp16", VOID, [sbase, gr, outside],
                               {**offset, "zero_if": True})
                else:
                    nbytes = source_bytes(ig)

                    def copy(gr, r, offset):
                        inside = b.cmp("lt", b.const(I32, r * R), lim)
                        # a source size of 0 reads nothing (the address may be past the end)
                        b.emit("tile.cp16", VOID,
                               [sbase, gr, b.select(inside, nbytes, c32(0))], offset)
                copies(copy)

            if whole != "all":
                bounded()
                return
            full = b.binop("and", b.cmp("le", o0, obound),
                           b.cmp("ge", b.sub(obound, o0), b.const(U64, home.outer)))
            full_b, part_b, done_b = (self.new_block(f"tile.{x}")
                                      for x in ("full", "part", "copied"))
            b.cbr(full, full_b, part_b)
            b.position_at_end(full_b)
            copies(lambda gr, r, offset: b.emit("tile.cp16", VOID, [sbase, gr, c32(16)],
                                                offset))
            self.goto(done_b)
            b.position_at_end(part_b)
            bounded()
            self.goto(done_b)
            b.position_at_end(done_b)

        def scalar():
            n = home.outer * home.inner

            def element(r):
                idx = b.add(b.mul(r, c32(W)), tid)

                def one():
                    o, v = b.div(idx, c32(home.inner)), b.rem(idx, c32(home.inner))
                    og, ig = b.add(o0, u(o)), b.add(i0, u(v))
                    ok = b.binop("and", b.cmp("lt", og, obound), b.cmp("lt", ig, ibound))
                    loc = b.local(self.fn, U16, "tile.sv")
                    b.local_set(loc, b.const(U16, 0))
                    self._if(ok, lambda: b.local_set(loc, b.load(b.ptradd(
                        src, b.convert(b.add(b.mul(og, ld64), ig), I64)))))
                    self._put(home.ptr, self._sh_index(home, o, v), b.local_get(loc))
                self._if(b.cmp("lt", idx, c32(n)), one)
            self._for(-(-n // W), element)

        if src.type.space != "global":      # cp.async reads global memory only
            scalar()
        else:
            then_b, else_b, end_b = (self.new_block(f"tile.{x}")
                                     for x in ("vec", "elem", "copied"))
            b.cbr(aligned, then_b, else_b)
            b.position_at_end(then_b)
            vector()
            self.goto(end_b)
            b.position_at_end(else_b)
            scalar()
            self.goto(end_b)
            b.position_at_end(end_b)
        b.async_commit(span=span)       # one copy group per load, waited for at its use
        # the copies read no shared tile: a load right after this one needs no barrier of
        # its own, though this one's paths ended the block its barrier was in
        self._tile_clean = b.block

    # ---------------------------------------------------------------- matmul
    def _frag_matmul(self, a: FragVal, bt: FragVal, c, rt: TileType, call) -> FragVal:
        """A matmul reading shared tile bt: first its copies complete (all but the copy
        groups the plan knows were issued after bt's) and are visible to the workgroup,
        unless one of those later loads synchronised (then they are already)."""
        b, c32 = self.b, self._c32
        span = call.span
        home = bt.shared
        pending, loads = self._tplan.waits.get(id(call), (0, ()))
        if not any(x in self._tile_synced for x in loads):
            self._publish(pending, span)
        if self._tplan.wgmma:
            return FragVal(rt, "frag", self._wg_matmul(a, bt, c, rt, span))
        M, K, N = a.type.rows, a.type.columns, bt.type.columns
        slabs = M // (16 * self._tplan.warps)
        nba, nbo = K // 8, N // 8
        fmt = a.type.format
        if c is not None:
            acc = [list(c.regs[4 * q:4 * q + 4]) for q in range(slabs * nbo)]
        else:
            acc = [[b.const(F32, NEG_ZERO)] * 4 for _ in range(slabs * nbo)]
        _, lane, _, _ = self._geo(span)
        mat, r = b.div(lane, c32(8)), b.rem(lane, c32(8))
        hi, lo = b.div(mat, c32(2)), b.rem(mat, c32(2))
        S = home.stride
        if home.col:    # rows are n: (8 (j + hi) + r) * S + 16 kc + 8 lo
            lane_off = b.add(b.mul(b.add(b.mul(hi, c32(8)), r), c32(S)), b.mul(lo, c32(8)))
        else:           # rows are k: (16 kc + 8 lo + r) * S + 8 (j + hi)
            lane_off = b.add(b.mul(b.add(b.mul(lo, c32(8)), r), c32(S)), b.mul(hi, c32(8)))
        base = self._at(home.ptr, lane_off)
        for jp in range(nbo // 2):
            j = 2 * jp
            for kc in range(K // 16):
                const = (8 * j * S + 16 * kc) if home.col else (16 * kc * S + 8 * j)
                m = b.emit("tile.ldmatrix", _VEC4U, [base],
                           {"trans": not home.col, "offset": 2 * const})
                bf = [b.emit("vec.extract", U32, [m], {"index": q}) for q in range(4)]
                for k in range(slabs):
                    w = (k * nba + 2 * kc) * 2
                    afrag = [a.regs[w], a.regs[w + 1], a.regs[w + 2], a.regs[w + 3]]
                    for dj in (0, 1):
                        q = k * nbo + j + dj
                        d = b.emit("tile.mma", _VEC4F, [*afrag, bf[2 * dj], bf[2 * dj + 1],
                                                        *acc[q]], {"format": fmt})
                        acc[q] = [b.emit("vec.extract", F32, [d], {"index": e})
                                  for e in range(4)]
        self._tile_clean = None
        return FragVal(rt, "frag", [x for q in acc for x in q])

