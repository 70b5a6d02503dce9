"""Tile values (docs/reference/tiles.md; design: docs/internals/tile-values.md).

A `tile<FORMAT, ROWS, COLUMNS>` is a workgroup-owned 2-D value. This module checks the
tile forms (E0350-E0355, E0303, E0310, E0343), types them, and lowers every operation to
the canonical replay of tile_replay.py (ordinary IR, so every PTX profile and SPIR-V run
it).

Every tile operation and tile assignment also emits `tile.uniform` (no code), which the
uniformity verifier checks like a workgroup collective (E0413/E0414). The native sm_90a
homes of the design (wgmma, TMA) are a later step; this lowering is the exact reference,
except that a matmul runs on warp tensor cores where the target has them (tile_mma.py).
"""
from __future__ import annotations

from . import ast as A
from ..ir.types import F32, I32, I64, U16, U32, U64, VOID, Type
from .scope import VarSym
from .tile_frag import FragVal, FragVar, TileFragMixin
from .tile_mma import TileMmaMixin
from .tile_replay import FORMATS, TileReplayMixin, TileType, TileVal
from .typesys import describe

_ELEMENTWISE = {"tile_exp2": 1, "tile_max": 2, "tile_min": 2, "tile_fma": 3}
_REDUCTIONS = {"tile_row_max": ("max", "rows"), "tile_row_sum": ("sum", "rows"),
               "tile_col_max": ("max", "columns"), "tile_col_sum": ("sum", "columns")}
VALUE_FUNCS = {"tile_fill", "tile_load", "tile_convert", "tile_mask", *_ELEMENTWISE,
               *_REDUCTIONS}
_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div"}


class TileMixin(TileFragMixin, TileMmaMixin, TileReplayMixin):
    # ---------------------------------------------------------------- recognition
    def is_tile_expr(self, e: A.Expr) -> bool:
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            return isinstance(sym, VarSym) and sym.kind == "tile"
        if isinstance(e, A.Call) and isinstance(e.callee, A.Name):
            name = e.callee.name
            if self.lookup(name) is not None:
                return False
            return name in VALUE_FUNCS or (name == "tensor_matmul" and bool(e.args)
                                           and self.is_tile_expr(e.args[0]))
        if isinstance(e, A.Binary) and e.op in _ARITH:
            return self.is_tile_expr(e.left) or self.is_tile_expr(e.right)
        if isinstance(e, A.Unary) and e.op == "-":
            return self.is_tile_expr(e.operand)
        return False

    def tile_scalar_use(self, e: A.Call, name: str):
        """A tile built-in reached where a scalar is lowered (gpu_call): only tile_store
        is a statement; everything else yields a tile."""
        self.kernel_only(f"`{name}`", e.span)
        if name == "tile_store":
            return self._store(e)
        if name in VALUE_FUNCS or name == "tensor_matmul":
            raise self.fail("E0353", f"`{name}` yields a tile; use it where a tile is "
                            "expected", e.span,
                            help="assign it to a `var t: tile<...>` or pass it to a tile "
                            "operation")
        raise self.fail("E0101", f"undefined function `{name}`", e.callee.span)

    # ---------------------------------------------------------------- types
    def format_word(self, word: str) -> str | None:
        """f16/bf16/f32, or the format a format constant names (None: neither)."""
        sym = self.lookup(word)
        if isinstance(sym, VarSym) and sym.kind == "format":
            return sym.storage
        return word if word in FORMATS and sym is None else None

    def tile_type(self, t: A.TileTypeExpr) -> TileType:
        fmt = self.format_word(t.format)
        if fmt is None:
            raise self.fail("E0350", f"unknown tile format `{t.format}`", t.span,
                            help="tile formats are f16, bf16 and f32")
        ext = []
        for what, x in (("rows", t.rows), ("columns", t.columns)):
            if isinstance(x, str):
                sym = self.lookup(x)
                if not (isinstance(sym, VarSym) and sym.kind == "const"
                        and isinstance(sym.storage, int)):
                    raise self.fail("E0350", f"tile {what} `{x}` is not an integer constant",
                                    t.span)
                x = sym.storage
            if not (x == 1 or (16 <= x <= 256 and x % 16 == 0)):
                raise self.fail("E0350", f"tile {what} must be 1 or a multiple of 16 from "
                                f"16 to 256, found {x}", t.span)
            ext.append(x)
        tt = TileType(fmt, ext[0], ext[1])
        if tt.replicated and tt.format != "f32":
            raise self.fail("E0350", f"a 16-bit tile cannot be a vector ({tt})", t.span,
                            help="row and column vectors are f32")
        return tt

    def _width(self, span) -> int:
        shape = self.sym.block_shape
        if shape is None or shape[1:] != (1, 1) or shape[0] % 128:
            raise self.fail("E0303", "a kernel with tile values declares a 1-D block whose "
                            "size is a multiple of 128", span,
                            help="declare it: `kernel(block = 128) name(...)`")
        return shape[0]

    def _slots(self, tt: TileType, span) -> int:
        if tt.replicated:
            return tt.count
        w = self._width(span)
        return (tt.count + w - 1) // w

    # ---------------------------------------------------------------- declarations
    def tile_decl(self, d: A.VarDecl) -> None:
        if d.storage != "none" or d.is_const or d.is_extern:
            raise self.fail("E0353", "a tile is a plain `var` local (not "
                            f"{'const' if d.is_const else d.storage or 'extern'})", d.span)
        if not self.in_kernel:
            raise self.fail("E0353", "tile variables are only legal in a kernel body", d.span,
                            help="helper functions over tiles are not supported")
        if not self.ctx.gpu:
            raise self.fail("E0353", "tile values need a GPU compile", d.span,
                            help="compile kernels with --emit-ptx")
        tt = self.tile_type(d.type)
        self._width(d.span)
        sym = VarSym(d.name, tt, "tile", None, d.span)
        if self._tile_fast():           # registers / shared tiles (tile_frag.py)
            self._frag_decl(d, tt, sym)
        elif d.init is None:
            sym.storage = self._alloc(tt, d.name, d.span)
            sym.needs_init = True
        else:
            v = self.tile_value(d.init, tt)
            self._same_type(v, tt, d.init.span)
            self._uniform("tile assignment", d.span, [])
            if v.fresh:
                sym.storage = v.ptr
            else:
                sym.storage = self._alloc(tt, d.name, d.span)
                self._copy(v, sym.storage, d.span)
        self.scope.names[d.name] = sym

    def tile_recover(self, d: A.VarDecl) -> None:
        """After an error in a tile declaration: declare the name (when its type is good)
        so that its uses do not report it undefined."""
        if d.name in self.scope.names or self.b.terminated:
            return
        from .lower_stmt import Abort
        reported = self.ctx.bag.mark()
        try:
            tt = self.tile_type(d.type)
        except Abort:
            self.ctx.bag.rollback(reported)     # the declaration reported it already
            return
        p = self._hoisted(self.b.gpu_alloc("private", tt.elem, max(tt.count, 1), d.name))
        self.scope.names[d.name] = VarSym(d.name, tt, "tile", p, d.span, poisoned=True)

    def _poisoned(self, sym: VarSym) -> None:
        """A tile declared by tile_recover has no value of the kernel's tile form (its
        storage is a stand-in array): a statement that reads or assigns it stops there,
        silently, since its declaration's error is already reported."""
        if sym.poisoned:
            from .lower_stmt import Abort
            raise Abort()

    def tile_assign(self, sym: VarSym, value: A.Expr, span) -> None:
        self._poisoned(sym)
        if isinstance(sym.storage, FragVar):
            return self._frag_assign(sym, value, span)
        v = self.tile_value(value, sym.type)
        self._same_type(v, sym.type, value.span)
        self._uniform("tile assignment", span, [])
        if v.ptr is not sym.storage:
            self._copy(v, sym.storage, span)
        self._mark(sym)

    def _same_type(self, v: TileVal, want: TileType, span) -> None:
        if v.type != want:
            raise self.fail("E0352", f"a {v.type} value cannot be assigned to a {want}", span,
                            help="tiles convert only through tile_convert; shapes must match")

    # ---------------------------------------------------------------- expressions
    def tile_value(self, e: A.Expr, want: TileType | None) -> TileVal:
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            if isinstance(sym, VarSym) and sym.kind == "tile":
                self._poisoned(sym)
                self.check_init(sym, e.span)
                if isinstance(sym.storage, FragVar):
                    return self._frag_read(sym)
                return TileVal(sym.type, sym.storage, False)
        elif isinstance(e, A.Binary) and e.op in _ARITH:
            a, b = self._operand(e.left, e.op), self._operand(e.right, e.op)
            return self._elementwise(_ARITH[e.op], [a, b], e.span, f"`{e.op}`")
        elif isinstance(e, A.Unary) and e.op == "-":
            return self._elementwise("neg", [self._operand(e.operand, "-")], e.span, "`-`")
        elif isinstance(e, A.Call) and isinstance(e.callee, A.Name) and \
                self.is_tile_expr(e):
            self.kernel_only(f"`{e.callee.name}`", e.span)
            return self._call(e, e.callee.name, want)
        raise self.fail("E0352", f"expected a tile, found {self._what(e)}", e.span)

    def _what(self, e: A.Expr) -> str:
        return f"`{e.name}`" if isinstance(e, A.Name) else "a scalar expression"

    def _operand(self, e: A.Expr, what: str):
        """A tile, or a workgroup-uniform float32 scalar (an IR value)."""
        if self.is_tile_expr(e):
            return self.tile_value(e, None)
        v = self.rvalue(e, F32)
        if v.type != F32:
            raise self.fail("E0352", f"{what} on a tile takes tiles or float32 scalars, "
                            f"found {describe(v.type)}", e.span)
        return v

    def _call(self, e: A.Call, name: str, want: TileType | None) -> TileVal:
        if name == "tensor_matmul":
            return self._matmul(e)
        if name in ("tile_fill", "tile_load"):
            if want is None:
                raise self.fail("E0351", f"`{name}` takes its shape from a tile variable",
                                e.span, help="declare `var t: tile<f32, R, C> = "
                                f"{name}(...)` or assign it to a tile variable")
            return self._fill(e, want) if name == "tile_fill" else self._load(e, want)
        if name == "tile_convert":
            return self._convert(e)
        if name == "tile_mask":
            return self._mask(e)
        if name in _REDUCTIONS:
            self._positional(e, 1, name)
            a = self._f32_tile(e.args[0], name)
            if isinstance(a, FragVal):
                self._uniform(name, e.span, [])
                return self._frag_reduce(_REDUCTIONS[name][0], a, TileType("f32", a.type.rows, 1))
            return self._reduce(*_REDUCTIONS[name], a, e.span, name)
        self._positional(e, _ELEMENTWISE[name], name)
        ops = [self._operand(x, f"`{name}`") for x in e.args]
        return self._elementwise(name[5:], ops, e.span, f"`{name}`")

    def _positional(self, e: A.Call, n: int, name: str, named=()) -> dict:
        if len(e.args) != n:
            raise self.fail("E0354", f"`{name}` takes {n} positional argument(s), found "
                            f"{len(e.args)}", e.span)
        out = {}
        for opt, value, span in e.named_args:
            if opt not in named:
                raise self.fail("E0354", f"`{name}` has no option `{opt}`" +
                                (f" (options: {', '.join(named)})" if named else ""), span)
            if opt in out:
                raise self.fail("E0354", f"option `{opt}` is given twice", span)
            out[opt] = value
        return out

    def _f32_tile(self, e: A.Expr, what: str) -> TileVal:
        t = self.tile_value(e, None)
        if t.type.format != "f32":
            raise self.fail("E0352", f"`{what}` needs an f32 tile, found {t.type}", e.span,
                            help="convert it first: tile_convert(t, to: f32)")
        return t

    # ---------------------------------------------------------------- scalar operands
    def _control(self, e: A.Expr, what: str):
        """A region control: an unsigned integer of at most 32 bits, as u64."""
        v = self.value(e, U32)
        if not (v.type.is_int and not v.type.signed and v.type.bits <= 32):
            raise self.fail("E0354", f"`{what}` must be an unsigned integer of at most 32 "
                            f"bits, found {describe(v.type)}", e.span)
        return v

    def _int(self, e: A.Expr, what: str, want: Type):
        v = self.rvalue(e, want)
        if not v.type.is_int:
            raise self.fail("E0354", f"`{what}` must be an integer, found {describe(v.type)}",
                            e.span)
        return v

    def _scalar_f32(self, e: A.Expr, what: str):
        v = self.rvalue(e, F32)
        if v.type != F32:
            raise self.fail("E0354", f"`{what}` must be a float32, found {describe(v.type)}",
                            e.span)
        return v

    def _uniform(self, what: str, span, roles) -> None:
        self.b.emit("tile.uniform", VOID, [v for _, v in roles],
                    {"what": what, "roles": tuple(r for r, _ in roles)}, span=span)

    # ---------------------------------------------------------------- elementwise
    def _broadcast(self, ops, span, what: str) -> TileType:
        tiles = [o.type for o in ops if isinstance(o, TileVal)]
        if not tiles:
            raise self.fail("E0352", f"{what} needs at least one tile operand", span)
        for t in tiles:
            if t.format != "f32":
                raise self.fail("E0352", f"{what} needs f32 tiles, found {t}", span,
                                help="convert first: tile_convert(t, to: f32)")
        big = max(tiles, key=lambda t: t.count)
        for t in tiles:
            if t == big or (t.replicated and (t == TileType("f32", big.rows, 1) or
                                              t == TileType("f32", 1, big.columns))):
                continue
            raise self.fail("E0352", f"{what}: cannot broadcast {t.shape} with {big.shape}",
                            span, help="operands have the same shape, or one is R x 1 or "
                            "1 x C of the other, or a float32 scalar")
        return big

    def _elementwise(self, op: str, ops, span, what: str) -> TileVal:
        rt = self._broadcast(ops, span, what)
        self._uniform(what.strip("`"), span,
                      [(f"scalar {k}", o) for k, o in enumerate(ops)
                       if not isinstance(o, TileVal)])
        if self._tile_fast():
            return self._frag_elementwise(op, ops, rt)
        out = self._alloc(rt, "t", span)
        self._each(rt, span, lambda s, i, j: self._put(
            out, s, self._scalar_op(op, [self._elem(o, rt, s, i, j) for o in ops])))
        return TileVal(rt, out, True)

    # ---------------------------------------------------------------- constructors
    def _fill(self, e: A.Call, rt: TileType) -> TileVal:
        self._positional(e, 1, "tile_fill")
        x = self._scalar_f32(e.args[0], "tile_fill")
        self._uniform("tile_fill", e.span, [("value", x)])
        if self._tile_fast():
            return self._frag_fill(x, rt)
        out = self._alloc(rt, "fill", e.span)
        v = self._narrow(x, rt.format)
        self._for(self._slots(rt, e.span), lambda s: self._put(out, s, v))
        return TileVal(rt, out, True)

    def _region(self, e: A.Call, name: str, first: int, named):
        """The region of tile_load/tile_store: positional row, column, rows, columns from
        args[first:], options ld: and layout:. Returns (controls, ld, col_layout)."""
        opts = self._positional(e, first + 4, name, named)
        names = ("row", "column", "rows", "columns")
        ctl = {n: self._control(x, n) for n, x in zip(names, e.args[first:])}
        layout = opts.get("layout")
        col = False
        if layout is not None:
            word = layout.name if isinstance(layout, A.Name) else None
            if word not in ("row", "col"):
                raise self.fail("E0354", "`layout:` is `row` or `col`", layout.span)
            col = word == "col"
        if "ld" in opts:
            ld = self._int(opts["ld"], "ld", U64)
        else:
            ld = ctl["rows" if col else "columns"]
        return ctl, ld, col

    def _pointer(self, e: A.Expr, tt: TileType, what: str):
        p = self.value(e, None)
        if not (p.type.is_ptr and p.type.pointee == tt.elem):
            storage = "uint16*" if tt.elem == U16 else "float32*"
            raise self.fail("E0343", f"`{what}` of a {tt} needs a {storage}, found "
                            f"{describe(p.type)}", e.span)
        return p

    def _load(self, e: A.Call, rt: TileType, into=None) -> TileVal:
        if not e.args:
            raise self.fail("E0354", "`tile_load` takes src, row, column, rows, columns",
                            e.span)
        src = self._pointer(e.args[0], rt, "tile_load")
        ctl, ld, col = self._region(e, "tile_load", 1, ("ld", "layout"))
        self._uniform("tile_load", e.span, [("src", src), *ctl.items(), ("ld", ld)])
        if into is not None:            # a shared tile (tile_frag.py)
            return self._shared_load(into, src, ctl, ld, col, e.span)
        if self._tile_fast():
            return self._frag_load(src, ctl, ld, col, rt, e.span)
        out = self._alloc(rt, "load", e.span)
        zero = self.b.const(rt.elem, 0.0 if rt.elem == F32 else 0)

        def body(s, i, j):
            ok, idx = self._addresses(ctl, ld, col, i, j)
            self._put(out, s, zero)
            self._if(ok, lambda: self._put(out, s, self.b.load(self.b.ptradd(src, idx))))
        self._each(rt, e.span, body)
        return TileVal(rt, out, True)

    def _store(self, e: A.Call):
        if len(e.args) < 2:
            raise self.fail("E0354", "`tile_store` takes dst, tile, row, column, rows, "
                            "columns", e.span)
        t = self.tile_value(e.args[1], None)
        dst = self._pointer(e.args[0], t.type, "tile_store")
        ctl, ld, col = self._region(e, "tile_store", 2, ("ld", "layout"))
        self._uniform("tile_store", e.span, [("dst", dst), *ctl.items(), ("ld", ld)])
        if isinstance(t, FragVal):
            return self._frag_store(dst, t, ctl, ld, col, e.span)

        def body(s, i, j):
            ok, idx = self._addresses(ctl, ld, col, i, j)
            if t.type.replicated:       # every work-item holds it: the owner stores
                w = self._c32(self._width(e.span))
                mine = self.b.cmp("eq", self.b.rem(s, w), self._tid(e.span))
                ok = self.b.binop("and", ok, mine)
            self._if(ok, lambda: self.b.store(self.b.ptradd(dst, idx), self._get(t, s)))
        self._each(t.type, e.span, body)
        return None

    def _convert(self, e: A.Call) -> TileVal:
        opts = self._positional(e, 1, "tile_convert", ("to",))
        a = self.tile_value(e.args[0], None)
        to = opts.get("to")
        fmt = self.format_word(to.name) if isinstance(to, A.Name) else None
        if fmt is None:
            raise self.fail("E0354", "`tile_convert` needs `to: f16 | bf16 | f32` (or a "
                            "format constant)", (to or e).span)
        rt = TileType(fmt, a.type.rows, a.type.columns)
        if rt.replicated and rt.format != "f32":
            raise self.fail("E0350", f"a 16-bit tile cannot be a vector ({rt})", e.span)
        self._uniform("tile_convert", e.span, [])
        if isinstance(a, FragVal):
            return self._frag_convert(a, rt)
        out = self._alloc(rt, "cvt", e.span)
        self._for(self._slots(rt, e.span), lambda s: self._put(
            out, s, self._narrow(self._widen(self._get(a, s), a.type.format), rt.format)))
        return TileVal(rt, out, True)

    def _mask(self, e: A.Call) -> TileVal:
        opts = self._positional(e, 5, "tile_mask", ("fill", "upper", "lower"))
        a = self._f32_tile(e.args[0], "tile_mask")
        names = ("row", "column", "rows", "columns")
        ctl = {n: self._control(x, n) for n, x in zip(names, e.args[1:])}
        if "fill" not in opts:
            raise self.fail("E0354", "`tile_mask` needs `fill:` (the masked value)", e.span)
        fill = self._scalar_f32(opts["fill"], "fill")
        diag = {k: self.value(opts[k], I32) for k in ("upper", "lower") if k in opts}
        for k, v in diag.items():
            if not (v.type.is_int and v.type.signed and v.type.bits <= 32):
                raise self.fail("E0354", f"`{k}:` is an int32, found {describe(v.type)}",
                                opts[k].span)
        self._uniform("tile_mask", e.span, [*ctl.items(), ("fill", fill), *diag.items()])
        rt = a.type
        if isinstance(a, FragVal):
            return self._frag_mask(a, ctl, fill, diag, e.span)
        out = self._alloc(rt, "mask", e.span)
        b = self.b

        def body(s, i, j):
            u = lambda v: b.convert(v, U64)     # noqa: E731
            r, c = b.add(u(ctl["row"]), u(i)), b.add(u(ctl["column"]), u(j))
            off = b.binop("or", b.cmp("ge", r, u(ctl["rows"])),
                          b.cmp("ge", c, u(ctl["columns"])))
            delta = b.sub(b.convert(c, I64), b.convert(r, I64))
            if "upper" in diag:
                off = b.binop("or", off, b.cmp("gt", delta, b.convert(diag["upper"], I64)))
            if "lower" in diag:
                off = b.binop("or", off, b.cmp("lt", delta, b.convert(diag["lower"], I64)))
            self._put(out, s, b.select(off, fill, self._get(a, s)))
        self._each(rt, e.span, body)
        return TileVal(rt, out, True)

    # ---------------------------------------------------------------- matmul
    def _matmul(self, e: A.Call) -> TileVal:
        if e.named_args:
            raise self.fail("E0354", "the tile form of `tensor_matmul` takes no options",
                            e.named_args[0][2], help="layouts belong to tile_load, "
                            "formats to the tile types")
        if len(e.args) not in (2, 3):
            raise self.fail("E0354", "the tile form of `tensor_matmul` takes a, b and an "
                            f"optional c, found {len(e.args)} arguments", e.span)
        a, b_ = (self.tile_value(x, None) for x in e.args[:2])
        ta, tb = a.type, b_.type
        if ta.format not in ("f16", "bf16") or tb.format != ta.format:
            raise self.fail("E0352", f"`tensor_matmul`: a and b are f16 or bf16 tiles of one "
                            f"format, found {ta} and {tb}", e.span)
        if ta.columns != tb.rows:
            raise self.fail("E0352", f"`tensor_matmul`: a is {ta.shape} and b is {tb.shape}; "
                            "a's columns must equal b's rows", e.span)
        rt = TileType("f32", ta.rows, tb.columns)
        c = None
        if len(e.args) == 3:
            c = self.tile_value(e.args[2], None)
            if c.type != rt:
                raise self.fail("E0352", f"`tensor_matmul`: c must be a {rt}, found {c.type}",
                                e.args[2].span)
        self._uniform("tensor_matmul", e.span, [])
        if isinstance(b_, FragVal):     # registers x a shared tile (tile_frag.py)
            return self._frag_matmul(a, b_, c, rt, e)
        if self._mma_fits(a, b_):       # warp tensor cores (tile_mma.py)
            return self._mma_matmul(a, b_, c, rt, e.span)
        return self._replay_matmul(a, b_, c, rt, e.span)
