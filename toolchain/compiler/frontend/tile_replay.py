"""The canonical replay of tile values (docs/reference/tiles.md "Targets"), as ordinary IR:
the value types and the code every tile operation lowers to; frontend/lower_tile.py checks
the tile forms and calls these. Layout, per work-item of a W-item block:

- a tile with both extents > 1 is *distributed*: element (i, j) (flat e = i*C + j) is held
  by work-item e mod W in private slot e / W (W = the kernel's declared 1-D block);
- a vector tile (R x 1, 1 x C) is *replicated*: every work-item holds all of it, so
  broadcasts read it locally and every work-item computes the same bits;
- reductions and matmul exchange elements through one workgroup scratch array, 16 rows (or
  16 K values) at a time, between `barrier`s; every operation that uses the scratch ends
  with a barrier, so the next one may reuse it;
- f32 arithmetic is `math.rn` (never contracted), `math.fma`, `math.exp2`; row sums use the
  canonical order of tiles.md, matmul accumulates `fma` in increasing k from c.
"""
from __future__ import annotations

from ...records import dataclass

from ..ir.types import F32, I64, U16, U32, U64, Type

FORMATS = {"f16": U16, "bf16": U16, "f32": F32}
NEG_ZERO = -0.0


@dataclass(frozen=True)
class TileType(Type):
    format: str
    rows: int
    columns: int

    def __str__(self) -> str:
        return f"tile<{self.format}, {self.rows}, {self.columns}>"

    @property
    def elem(self) -> Type:
        return FORMATS[self.format]

    @property
    def count(self) -> int:
        return self.rows * self.columns

    @property
    def replicated(self) -> bool:
        return self.rows == 1 or self.columns == 1

    @property
    def shape(self) -> str:
        return f"{self.rows}x{self.columns}"


class TileVal:
    """A tile value during lowering: its type and the private array that holds this
    work-item's elements. `fresh`: a temporary no variable names (a declaration adopts it)."""

    def __init__(self, type: TileType, ptr, fresh: bool):
        self.type, self.ptr, self.fresh = type, ptr, fresh


class TileReplayMixin:
    """The IR-emitting half of the tile lowering (mixed into FunctionLowerer through
    lower_tile.TileMixin): loops over a work-item's elements, scalar IEEE helpers,
    reductions through workgroup scratch and the replay matmul."""
    # ---------------------------------------------------------------- IR helpers
    def _c32(self, n: int):
        return self.b.const(U32, n)

    def _i64(self, v):
        return self.b.convert(v, I64)

    def _at(self, p, index):
        return self.b.ptradd(p, self._i64(index))

    def _hoisted(self, ins):
        """Move an allocation to the entry block: scratch arrays are shared by operations in
        different blocks, and a private array is then one `.local` per tile."""
        ins.block.instrs.remove(ins)
        entry = self.fn.blocks[0]
        entry.instrs.insert(0, ins)
        ins.block = entry
        return ins

    def _alloc(self, tt: TileType, name: str, span):
        return self._hoisted(self.b.gpu_alloc("private", tt.elem, self._slots(tt, span),
                                              f"tile.{name}", span=span))

    def _grown(self, name: str, elem, count: int, span):
        """The kernel's one workgroup array `name`, grown to the largest request (every
        operation that uses it ends with a barrier, so they share it)."""
        p = self.__dict__.get("_" + name)
        if p is None:
            p = self._hoisted(self.b.gpu_alloc("workgroup", elem, count, name, span=span))
            self.__dict__["_" + name] = p
        p.attrs["count"] = max(p.attrs["count"], count)
        return p

    def _scratch(self, floats: int, span):
        """The f32 scratch of reductions and the replayed matmul."""
        return self._grown("tile_scratch", F32, floats, span)

    def _barrier(self, span) -> None:
        self.b.barrier(("workgroup",), "acq_rel", span=span)

    def _tid(self, span):
        return self.b.gpu_index("thread", "x", span=span)

    def _for(self, n: int, body) -> None:
        """body(i) for i in 0..n-1 (an IR loop; a constant trip count, so uniform)."""
        if n <= 0:
            return
        if n == 1:
            body(self._c32(0))
            return
        self._tile_loop(self._c32(0), self._c32(n), body)

    def _tile_loop(self, lo, hi, body) -> None:
        """body(i) for i in lo..hi-1 (u32 IR values; workgroup-uniform bounds)."""
        b = self.b
        i = b.local(self.fn, U32, "tile.i")
        b.local_set(i, lo)
        cond_b, body_b, end_b = (self.new_block(f"tile.{x}") for x in ("cond", "body", "end"))
        if b.ssa is not None:
            b.ssa.defer_seal(cond_b)
        self.goto(cond_b)
        b.position_at_end(cond_b)
        iv = b.local_get(i)
        b.cbr(b.cmp("lt", iv, hi), body_b, end_b)
        b.position_at_end(body_b)
        body(iv)
        b.local_set(i, b.add(b.local_get(i), self._c32(1)))
        self.goto(cond_b)
        if b.ssa is not None:
            b.ssa.seal(cond_b)
        b.position_at_end(end_b)

    def _if(self, cond, then) -> None:
        then_b, end_b = self.new_block("tile.then"), self.new_block("tile.next")
        self.b.cbr(cond, then_b, end_b)
        self.b.position_at_end(then_b)
        then()
        self.goto(end_b)
        self.b.position_at_end(end_b)

    def _each(self, tt: TileType, span, body) -> None:
        """body(slot, i, j) for each element this work-item holds (u32 values)."""
        b = self.b
        if tt.replicated:
            zero = self._c32(0)
            self._for(tt.count, lambda k: body(k, *((k, zero) if tt.columns == 1
                                                    else (zero, k))))
            return
        w, n = self._width(span), tt.count
        tid = self._tid(span)

        def slot(s):
            e = b.add(b.mul(s, self._c32(w)), tid)

            def element():
                c = self._c32(tt.columns)
                body(s, b.div(e, c), b.rem(e, c))
            if n % w:
                self._if(b.cmp("lt", e, self._c32(n)), element)
            else:
                element()
        self._for((n + w - 1) // w, slot)

    def _each_slab(self, tt: TileType, r0, span, body) -> None:
        """body(slot, i - r0, j) for each element this work-item holds in rows [r0, r0 + 16)
        of a distributed tile (rows a multiple of 16): only the slots that reach the slab,
        flat indices [r0*C, (r0 + 16)*C), are visited."""
        b, c32 = self.b, self._c32
        w, C = self._width(span), tt.columns
        first = b.mul(r0, c32(C))
        end = b.add(first, c32(16 * C))
        tid = self._tid(span)

        def slot(s):
            e = b.add(b.mul(s, c32(w)), tid)
            ok = b.binop("and", b.cmp("ge", e, first), b.cmp("lt", e, end))
            self._if(ok, lambda: body(s, b.sub(b.div(e, c32(C)), r0), b.rem(e, c32(C))))
        self._tile_loop(b.div(first, c32(w)), b.div(b.add(end, c32(w - 1)), c32(w)), slot)

    def _elem(self, v, rt: TileType, s, i, j):
        """Operand `v` (a TileVal or an f32 scalar) at element (i, j) of a result of rt."""
        if not isinstance(v, TileVal):
            return v
        t = v.type
        if t.rows == rt.rows and t.columns == rt.columns:
            idx = s
        elif t.columns == 1:
            idx = i
        else:
            idx = j
        return self.b.load(self._at(v.ptr, idx))

    def _get(self, v: TileVal, s):
        return self.b.load(self._at(v.ptr, s))

    def _put(self, p, s, value) -> None:
        self.b.store(self._at(p, s), value)

    def _copy(self, v: TileVal, dst, span) -> None:
        self._for(self._slots(v.type, span), lambda s: self._put(dst, s, self._get(v, s)))

    # ---------------------------------------------------------------- scalar math
    def _rn(self, op: str, a, b):
        return self.b.intrinsic("math.rn", F32, [a, b], {"op": op})

    def _bits(self, v):
        return self.b.bitcast(v, U32)

    def _is_nan(self, v):
        b = self.b
        mag = b.binop("and", self._bits(v), self._c32(0x7FFFFFFF))
        return b.cmp("gt", mag, self._c32(0x7F800000))

    def _maxnum(self, x, y, is_max: bool):
        """IEEE maximumNumber/minimumNumber: a NaN operand is ignored, -0 < +0."""
        b = self.b
        r = b.select(b.cmp("gt" if is_max else "lt", x, y), x, y)
        r = b.select(self._is_nan(y), x, r)
        zeros = b.binop("and" if is_max else "or", self._bits(x), self._bits(y))
        return b.select(b.cmp("eq", x, y), b.bitcast(zeros, F32), r)

    def _scalar_op(self, op: str, vals):
        b = self.b
        if op in ("add", "sub", "mul", "div"):
            return self._rn(op, *vals)
        if op == "neg":
            return b.unop("neg", vals[0])
        if op in ("max", "min"):
            return self._maxnum(vals[0], vals[1], op == "max")
        if op == "fma":
            return b.intrinsic("math.fma", F32, vals)
        return b.intrinsic("math.exp2", F32, vals)

    def _widen(self, v, fmt: str):
        if fmt == "f16":
            return self.b.intrinsic("cvt.h2f", F32, [v])
        if fmt == "bf16":
            return self.b.intrinsic("cvt.bf2f", F32, [v])
        return v

    def _narrow(self, v, fmt: str):
        if fmt == "f16":
            return self.b.intrinsic("cvt.f2h", U16, [v])
        if fmt == "bf16":
            return self.b.intrinsic("cvt.f2bf", U16, [v])
        return v

    # ---------------------------------------------------------------- regions
    def _addresses(self, ctl, ld, col: bool, i, j):
        """(in range, element index) of element (i, j), in 64 bits."""
        b = self.b
        u = lambda v: b.convert(v, U64)     # noqa: E731
        r, c = b.add(u(ctl["row"]), u(i)), b.add(u(ctl["column"]), u(j))
        ok = b.binop("and", b.cmp("lt", r, u(ctl["rows"])), b.cmp("lt", c, u(ctl["columns"])))
        idx = b.add(b.mul(c, u(ld)), r) if col else b.add(b.mul(r, u(ld)), c)
        return ok, b.convert(idx, I64)

    # ---------------------------------------------------------------- reductions
    def _row_order(self, get, n: int, op: str):
        """Reduce get(0..n-1): `max` in increasing order, `sum` in the canonical row
        order (four classes q = (c / 2) % 4, each left to right, then (s0+s1)+(s2+s3))."""
        if n == 1:
            return get(self._c32(0))
        if op == "max":
            return self._seq(get, n, "max")
        b = self.b
        acc = []
        for q in range(4):
            loc = b.local(self.fn, F32, "tile.sum")
            b.local_set(loc, self._rn("add", get(self._c32(2 * q)), get(self._c32(2 * q + 1))))
            acc.append(loc)

        def step(m):
            base = b.mul(b.add(m, self._c32(1)), self._c32(8))
            for q in range(4):
                for k in (0, 1):
                    x = get(b.add(base, self._c32(2 * q + k)))
                    b.local_set(acc[q], self._rn("add", b.local_get(acc[q]), x))
        self._for(n // 8 - 1, step)
        s = [b.local_get(x) for x in acc]
        return self._rn("add", self._rn("add", s[0], s[1]), self._rn("add", s[2], s[3]))

    def _seq(self, get, n: int, op: str):
        """get(0) op get(1) op ... in increasing order (column sums, maxima)."""
        b = self.b
        loc = b.local(self.fn, F32, "tile.acc")
        b.local_set(loc, get(self._c32(0)))

        def step(k):
            x = get(b.add(k, self._c32(1)))
            y = b.local_get(loc)
            b.local_set(loc, self._maxnum(y, x, True) if op == "max" else
                        self._rn("add", y, x))
        self._for(n - 1, step)
        return b.local_get(loc)

    def _reduce(self, op: str, axis: str, a: TileVal, span, name: str) -> TileVal:
        t = a.type
        rt = TileType("f32", t.rows, 1) if axis == "rows" else TileType("f32", 1, t.columns)
        self._uniform(name, span, [])
        out = self._alloc(rt, "red", span)
        b = self.b
        if t.replicated:        # held whole by every work-item: reduce locally
            length = t.columns if axis == "rows" else t.rows
            if length == 1:
                self._copy(a, out, span)
            else:
                get = lambda k: self._get(a, k)     # noqa: E731
                v = self._row_order(get, length, op) if axis == "rows" else \
                    self._seq(get, length, op)
                self._put(out, self._c32(0), v)
            return TileVal(rt, out, True)
        R, C = t.rows, t.columns
        scr = self._scratch(16 * C + max(R, C), span)
        res = b.ptradd(scr, b.const(I64, 16 * C))
        tid = self._tid(span)

        def slab(k):
            r0 = b.mul(k, self._c32(16))
            self._to_scratch(a, scr, r0, span)
            self._barrier(span)
            if axis == "rows":
                def row():
                    base = b.mul(tid, self._c32(C))
                    v = self._row_order(lambda c: b.load(self._at(scr, b.add(base, c))), C, op)
                    self._put(res, b.add(r0, tid), v)
                self._if(b.cmp("lt", tid, self._c32(16)), row)
            else:
                self._column_step(scr, res, k, tid, C, op, span)
            self._barrier(span)
        self._for(R // 16, slab)
        self._for(rt.count, lambda k: self._put(out, k, b.load(self._at(res, k))))
        self._barrier(span)
        return TileVal(rt, out, True)

    def _to_scratch(self, a: TileVal, scr, r0, span) -> None:
        """Rows [r0, r0 + 16) of distributed tile a into scr[(i - r0) * C + j]."""
        b, C = self.b, a.type.columns
        self._each_slab(a.type, r0, span, lambda s, di, j: self._put(
            scr, b.add(b.mul(di, self._c32(C)), j), self._get(a, s)))

    def _column_step(self, scr, res, k, tid, C: int, op: str, span) -> None:
        """res[j] op= rows 0..15 of the slab, sequentially; slab 0 starts from its row 0."""
        b = self.b
        w = self._width(span)

        def column(jj):
            j = b.add(b.mul(jj, self._c32(w)), tid)

            def run():
                first = b.cmp("eq", k, self._c32(0))
                acc = b.local(self.fn, F32, "tile.col")
                b.local_set(acc, b.load(self._at(res, j)))
                for r in range(16):
                    x = b.load(self._at(scr, b.add(self._c32(r * C), j)))
                    y = b.local_get(acc)
                    v = self._maxnum(y, x, True) if op == "max" else self._rn("add", y, x)
                    if r == 0:
                        v = b.select(first, x, v)
                    b.local_set(acc, v)
                self._put(res, j, b.local_get(acc))
            self._if(b.cmp("lt", j, self._c32(C)), run)
        self._for((C + w - 1) // w, column)

    # ---------------------------------------------------------------- matmul
    def _replay_matmul(self, a: TileVal, bt: TileVal, c, rt: TileType, span) -> TileVal:
        b = self.b
        M, K, N = a.type.rows, a.type.columns, bt.type.columns
        out = self._alloc(rt, "mm", span)
        init = b.const(F32, NEG_ZERO)
        self._each(rt, span, lambda s, i, j: self._put(
            out, s, self._get(c, s) if c is not None else init))
        scr = self._scratch(16 * (M + N), span)
        sb = b.ptradd(scr, b.const(I64, 16 * M))
        fmt = a.type.format

        def chunk(kc):
            k0 = b.mul(kc, self._c32(16))

            def stage_a(s, i, j):
                dq = b.sub(j, k0)
                self._if(b.cmp("lt", dq, self._c32(16)), lambda: self._put(
                    scr, b.add(b.mul(i, self._c32(16)), dq), self._widen(self._get(a, s), fmt)))

            def stage_b(s, i, j):
                dq = b.sub(i, k0)
                self._if(b.cmp("lt", dq, self._c32(16)), lambda: self._put(
                    sb, b.add(b.mul(dq, self._c32(N)), j), self._widen(self._get(bt, s), fmt)))
            self._each(a.type, span, stage_a)
            self._each(bt.type, span, stage_b)
            self._barrier(span)

            def accumulate(s, i, j):
                acc = self._get(TileVal(rt, out, True), s)
                row = b.mul(i, self._c32(16))
                for kk in range(16):
                    x = b.load(self._at(scr, b.add(row, self._c32(kk))))
                    y = b.load(self._at(sb, b.add(self._c32(kk * N), j)))
                    acc = b.intrinsic("math.fma", F32, [x, y, acc])
                self._put(out, s, acc)
            self._each(rt, span, accumulate)
            self._barrier(span)
        self._for(K // 16, chunk)
        return TileVal(rt, out, True)
