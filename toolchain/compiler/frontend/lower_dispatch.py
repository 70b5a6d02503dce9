"""`dispatch` (LANGUAGE §9, gpu.md "The dispatch statement") -> builder.launch.

Typed form: K names a `kernel`/`extern kernel` in scope: argument count/types are checked
(an integer is accepted for a pointer parameter and passed as int64), the handle is
const(i64, 0) with attrs.kernel = "K" (host lowering fetches the real handle). Untyped form:
K is an int64/pointer handle expression and arguments pass with their own types.
Grid/block are i32 triples, shared bytes i32, stream i64. All diagnostics are E0330.
"""
from __future__ import annotations

from . import ast as A
from ..ir.types import I32, I64, PtrType
from .scope import FnSym
from .typesys import describe


class DispatchMixin:
    def stmt_Dispatch(self, s: A.Dispatch) -> None:
        if self.device:
            raise self.fail("E0330", "`dispatch` cannot be used inside device code", s.span)
        ksym = self._typed_kernel(s.kernel)
        if len(s.args) > 64:
            raise self.fail("E0330", f"dispatch takes at most 64 arguments, found "
                            f"{len(s.args)}", s.span)
        if ksym is not None:
            handle, name = self.b.const(I64, 0), ksym.fn.name if ksym.fn else \
                (ksym.decl.internal_name or ksym.name)
        else:
            handle, name = self._handle(s.kernel), None
        grid, block = self._geometry(s, ksym)
        shared = self._dim(s.shared, "shared bytes", allow_zero=True) if s.shared is not None \
            else self.b.const(I32, 0)
        if s.stream is not None and s.on_stream is not None:
            raise self.fail("E0330", "the stream is given twice (`stream:` and `on`)",
                            s.on_stream.span)
        stream_e = s.stream if s.stream is not None else s.on_stream
        stream = self._handle(stream_e, "stream") if stream_e is not None \
            else self.b.const(I64, 0)
        args = self._dispatch_args(s, ksym)
        self.b.launch(handle, grid, block, shared, stream, args, kernel=name, span=s.span)

    def _typed_kernel(self, k: A.Expr):
        if isinstance(k, A.Name):
            sym = self.lookup(k.name)
            if isinstance(sym, FnSym) and sym.is_kernel:
                return sym
            if isinstance(sym, FnSym):
                raise self.fail("E0330", f"`{k.name}` is a function, not a kernel", k.span)
        return None

    def _handle(self, e: A.Expr, what: str = "kernel handle"):
        v = self.value(e, I64)
        if isinstance(v.type, PtrType):
            return self.b.ptrtoint(v, I64)
        if not v.type.is_int:
            raise self.fail("E0330", f"a {what} must be an int64 or a pointer, found "
                            f"{describe(v.type)}", e.span)
        return self.b.convert(v, I64)

    def _dim(self, e: A.Expr, what: str, allow_zero: bool = False):
        k = self.const_int(e)
        if k is not None and (k < 0 or (k == 0 and not allow_zero)):
            raise self.fail("E0330", f"{what} must be positive, found {k}", e.span)
        v = self.value(e, I32)
        if not v.type.is_int:
            raise self.fail("E0330", f"{what} must be an integer, found {describe(v.type)}",
                            e.span)
        return self.b.convert(v, I32)

    def _triple(self, dims: list[A.Expr], what: str, span):
        if len(dims) == 1 and isinstance(dims[0], A.TupleExpr):
            dims = dims[0].elems
        if len(dims) != 3:
            raise self.fail("E0330", f"`{what}:` needs exactly three dimensions, found "
                            f"{len(dims)}", span)
        return [self._dim(d, f"{what} dimension") for d in dims]

    def _geometry(self, s: A.Dispatch, ksym):
        one = self.b.const(I32, 1)
        declared = ksym.block_shape if ksym is not None else None
        if s.work is not None:
            if s.grid or s.block:
                raise self.fail("E0330", "`work:` replaces grid and block", s.span)
            if declared is None:
                raise self.fail("E0330", "`work:` needs a typed kernel with a declared "
                                "block", s.work.span)
            vol = declared[0] * declared[1] * declared[2]
            ipb = vol // 32 if ksym.per_warp else vol
            n = self._dim(s.work, "work")
            g = self.b.div(self.b.add(n, self.b.const(I32, ipb - 1)), self.b.const(I32, ipb))
            return [g, one, one], [self.b.const(I32, d) for d in declared]
        if not s.grid or not s.block:
            raise self.fail("E0330", "dispatch needs both grid and block", s.span)
        if s.named:
            grid = self._triple(s.grid, "grid", s.span)
            block = self._triple(s.block, "block", s.span)
            block_exprs = s.block[0].elems if len(s.block) == 1 and \
                isinstance(s.block[0], A.TupleExpr) else s.block
        else:
            grid = [self._dim(s.grid[0], "grid"), one, one]
            block = [self._dim(s.block[0], "block"), one, one]
            block_exprs = [s.block[0]]
        if declared is not None:
            lits = [self.const_int(x) for x in block_exprs] + [1] * (3 - len(block_exprs))
            if None not in lits and tuple(lits) != tuple(declared):
                raise self.fail("E0330", f"block {tuple(lits)} disagrees with the declared "
                                f"block {tuple(declared)} of `{ksym.name}`", block_exprs[0].span)
        return grid, block

    def _dispatch_args(self, s: A.Dispatch, ksym):
        if ksym is None:
            return [self.value(a, None) for a in s.args]
        if len(s.args) != len(ksym.params):
            raise self.fail("E0330", f"kernel `{ksym.name}` takes {len(ksym.params)} "
                            f"argument(s), found {len(s.args)}", s.span)
        out = []
        for a, t in zip(s.args, ksym.params):
            if isinstance(t, PtrType):
                v = self.value(a, I64)
                if v.type.is_int:
                    out.append(self.b.convert(v, I64))
                    continue
                if not isinstance(v.type, PtrType):
                    raise self.fail("E0330", f"expected {describe(t)} (or an int64 device "
                                    f"pointer), found {describe(v.type)}", a.span)
                out.append(v)
            else:
                out.append(self.rvalue(a, t))
        return out
