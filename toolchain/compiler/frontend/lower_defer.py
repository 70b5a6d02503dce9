"""`defer` and `errdefer`: deferred statements run when their block is left.

Every `{ }` block (function body, branch, loop body, match arm, switch case) has a frame of
pending entries (lower_stmt.lower_block_stmts pushes and pops it). Leaving a block runs its
entries last-registered-first, then the enclosing frames' as control leaves them:
- normal end of the block: that frame's `defer` entries (`errdefer` ones are dropped);
- `break`/`continue` (labelled or not): every frame opened inside the loop being left;
- `return`: every frame. The returned value is computed first, then the entries run (so a
  deferred assignment never changes what is returned). `errdefer` entries run only when
  that value is non-zero (a non-zero integer, `true`, a non-null pointer, a non-zero float).

A deferred call of a named function saves its argument values when the `defer` runs; every
other form (method call, call through a value, assignment, block, and every `errdefer`) is
evaluated at exit. The code of an entry is emitted once per exit path; its diagnostics are
reported once. Names in a deferred statement resolve in the scope where it was written.
"""
from __future__ import annotations

from ...records import dataclass

from . import ast as A
from ..diagnostics import DiagnosticBag
from ..ir.types import ArrayType, FnPtrType, PtrType, StructType
from .scope import FnSym, Scope
from .typesys import STRING


@dataclass(eq=False)
class DeferEntry:
    stmt: A.Stmt
    is_err: bool
    scope: Scope
    call: FnSym | None = None       # a snapshotted direct call: `saved` holds its arguments
    saved: list | None = None
    emitted: bool = False


class DeferMixin:
    def stmt_Defer(self, s: A.Defer) -> None:
        ret = self.fn.ret
        if s.is_err and (isinstance(ret, (StructType, ArrayType)) or ret == STRING):
            raise self.fail("E0021", "errdefer requires a scalar or pointer return type "
                            "(the returned value decides whether it runs)", s.span)
        entry = DeferEntry(s.stmt, s.is_err, self.scope)
        sym = None if s.is_err else self._direct_callee(s.stmt)
        if sym is not None:
            call = s.stmt.expr
            self._no_named(call)
            args = self._args(call, sym.params, sym)
            entry.call, entry.saved = sym, []
            for v in args:
                st = self.slot(v.type, "defer.arg")
                self.store_to(st, v)
                entry.saved.append(st)
        self.defer_frames[-1].append(entry)

    def _direct_callee(self, stmt: A.Stmt) -> FnSym | None:
        if not (isinstance(stmt, A.ExprStmt) and isinstance(stmt.expr, A.Call) and
                isinstance(stmt.expr.callee, A.Name)):
            return None
        sym = self.lookup(stmt.expr.callee.name)
        if isinstance(sym, FnSym) and sym.fn is not None and not (
                sym.is_extern and self.is_intrinsic(sym.name)):
            return sym
        return None

    def run_defers(self, down_to: int, error_path: bool) -> None:
        """Emit the pending entries of frames[down_to:], innermost block first."""
        for frame in reversed(self.defer_frames[down_to:]):
            for entry in reversed(frame):
                if entry.is_err and not error_path:
                    continue
                if self.b.terminated:
                    return
                self._emit(entry)

    def _emit(self, entry: DeferEntry) -> None:
        saved_scope, self.scope = self.scope, entry.scope
        bag = self.ctx.bag
        if entry.emitted:
            self.ctx.bag = DiagnosticBag()      # already reported on the first path
        try:
            if entry.call is not None:
                args = [self.load_slot(st) for st in entry.saved]
                self.b.call(entry.call.fn, args, span=entry.stmt.span)
            else:
                self.lower_stmt_safe(entry.stmt)
        finally:
            self.ctx.bag = bag
            self.scope = saved_scope
            entry.emitted = True

    def return_value(self, v, s: A.Return) -> None:
        """`return v` with pending defers: errdefers run only on a non-zero `v`."""
        if not any(e.is_err for f in self.defer_frames for e in f):
            self.run_defers(0, False)
            self.b.ret(v)
            return
        if self.untyped(s.value) and self.const_int(s.value):
            self.warn("W0002", "non-zero constant return in a function with errdefer will "
                      "trigger errdefer by convention", s.value.span)
        t = v.type
        if t.is_bool:
            failed = v
        elif isinstance(t, (PtrType, FnPtrType)):
            failed = self.b.cmp("ne", v, self.b.const(t, 0))
        else:
            failed = self.b.cmp("ne", v, self.b.const(t, 0.0 if t.is_float else 0))
        err_b, ok_b = self.new_block("errdefer"), self.new_block("ret")
        self.b.cbr(failed, err_b, ok_b)
        for blk, error_path in ((err_b, True), (ok_b, False)):
            self.b.position_at_end(blk)
            self.run_defers(0, error_path)
            if not self.b.terminated:
                self.b.ret(v)
