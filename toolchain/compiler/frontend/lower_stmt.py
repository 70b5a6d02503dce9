"""Statement lowering (LANGUAGE §3 locals, §5 control flow) with definite-assignment
tracking and the "unreachable statement" warning.

Loops and switches become blocks: `while` = cond/body/end; C `for` adds a step block
(`continue` jumps there); `for k in a..b` evaluates `a` once and re-reads `b` every
iteration; `switch` is a compare chain into per-case body blocks laid out in source order so
that falling off one body enters the next (C fall-through); an unlabelled `break` leaves the
innermost loop or switch, `continue` the innermost loop.
"""
from __future__ import annotations

from . import ast as A
from ..ir import IRTypeError
from ..ir.module import Local
from ..ir.types import BOOL, I32, VOID, ArrayType, PtrType, StructType
from .consteval import ConstDivZero, const_value
from .scope import Scope, VarSym
from .typesys import describe, with_space

_TERMINATING = (A.Return, A.Break, A.Continue)


class Abort(Exception):
    """The current statement cannot be lowered further (its diagnostic is recorded).

    Defined here, where it is caught once per statement, so that catching it needs no
    import of lower_fn (which imports this module); lower_fn re-exports it."""


def _returns_inside(s: A.Stmt) -> bool:
    """Whether a `return` is nested in statement `s` (a failed `match`, `if` or loop may
    have been the function's return path)."""
    stack: list = [s]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Return):
            return True
        if isinstance(n, A.Lambda):
            continue                        # a lambda's return is its own
        if isinstance(n, (list, tuple)):
            stack.extend(n)
        elif isinstance(n, A.Node):
            stack.extend(v for v in vars(n).values() if isinstance(v, (A.Node, list, tuple)))
    return False


class StmtMixin:
    # ---------------------------------------------------------------- blocks
    def lower_block_stmts(self, stmts: list[A.Stmt], scope: Scope) -> None:
        saved, self.scope = self.scope, scope
        warned = False
        frames = self.defer_frames
        frames.append([])
        try:
            for i, s in enumerate(stmts):
                if i and isinstance(stmts[i - 1], _TERMINATING) and not warned:
                    self.warn("W0001", "unreachable statement", s.span)
                    warned = True
                self.lower_stmt_safe(s)
            if frames[-1] and not self.b.terminated:
                self.run_defers(len(frames) - 1, False)     # leaving the block normally
        finally:
            frames.pop()
            self.scope = saved

    def lower_stmt_safe(self, s: A.Stmt) -> None:
        try:
            self.lower_stmt(s)
        except Abort:
            self._recover(s)
        except IRTypeError as e:
            self.error("E0900", f"internal error: {e}", s.span)

    def _recover(self, s: A.Stmt) -> None:
        """After an error: keep a failed `return` terminating and a failed `var` declared,
        so one mistake does not cascade into missing-return / undefined-name errors."""
        if isinstance(s, A.Return) or _returns_inside(s):
            self.assigned = None            # it may have returned: no missing-return error
        elif isinstance(s, A.VarDecl) and isinstance(s.type, A.TileTypeExpr):
            self.tile_recover(s)
        elif isinstance(s, A.VarDecl) and s.storage == "none" and s.type is not None and \
                s.name not in self.scope.names:
            t = self.ctx.resolve_type(s.type)
            if self.b.terminated:
                self.start_dead_block()
            self.scope.names[s.name] = VarSym(s.name, t, "local", self.b.alloca(t, s.name),
                                              s.span)

    def lower_stmt(self, s: A.Stmt) -> None:
        if self.b.terminated:
            self.start_dead_block()
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise self.fail("E0010", f"{type(s).__name__} is not allowed here", s.span)
        method(s)

    def stmt_Block(self, s: A.Block) -> None:
        self.lower_block_stmts(s.stmts, self.scope.child())

    def stmt_ExprStmt(self, s: A.ExprStmt) -> None:
        self.value(s.expr, None, discard=True)

    def stmt_Assign(self, s: A.Assign) -> None:
        value = s.value
        if s.op != "=":
            if isinstance(value, (A.ArrayLit, A.ArrayRepeat, A.StructLit)):
                raise self.fail("E0012", "aggregate literal in a compound assignment",
                                value.span)
            value = A.Binary(s.op[:-1], s.target, s.value, span=s.span)
        self.assign(s.target, value)

    # ---------------------------------------------------------------- declarations
    def stmt_VarDecl(self, d: A.VarDecl) -> None:
        if isinstance(d.type, A.TileTypeExpr):
            self.tile_decl(d)
            return
        if d.storage != "none":
            self.gpu_var(d)
            return
        if d.is_extern or d.type is None:
            raise self.fail("E0003", f"`var {d.name}` needs a type", d.span)
        errors = self.ctx.bag.error_count
        t = self.ctx.resolve_type(d.type)
        if self.ctx.bag.error_count > errors:
            raise Abort()           # an unknown type: declared by recovery, init unchecked
        enum = self.ctx.enum_of_type(d.type)
        if t == VOID:
            raise self.fail("E0201", "a variable cannot have type void", d.type.span)
        if self.device and isinstance(t, ArrayType):
            raise self.fail("E0311", "arrays cannot be locals in device code",
                            d.span, help="use `private var` or `workgroup var`")
        if d.is_const and d.init is not None and t.is_int:
            v = self.const_int(d.init)
            if v is not None:
                self.scope.names[d.name] = VarSym(d.name, t, "const", t.wrap(v), d.span,
                                                  enum=enum, is_const=True)
                return
        sym = self.declare_local(d, t, enum)
        self.scope.names[d.name] = sym

    def stmt_ConstDecl(self, d: A.ConstDecl) -> None:
        """A local `const` (§3): it has a type (the parser reports a missing one) and any
        initializer; an integer constant one folds, anything else is a read-only local."""
        if d.type is None:
            raise Abort()
        self.stmt_VarDecl(d)

    def declare_local(self, d: A.VarDecl, t, enum) -> VarSym:
        if isinstance(t, PtrType) and self.device:
            t = with_space(t, "global")
        if d.init is not None and not isinstance(t, (ArrayType, StructType)) and \
                not isinstance(d.init, (A.ArrayLit, A.ArrayRepeat, A.StructLit)):
            v = self.rvalue(d.init, t, keep_space=self.device)
            if self.device and isinstance(t, PtrType) and isinstance(v.type, PtrType):
                t = v.type              # a device pointer local keeps its value's space
            st = self.slot(t, d.name, d.name in self.addr_taken and not self.device)
            if isinstance(st, Local) and d.name not in self.assigned_names:
                self.b.local_set(st, v, final=True)    # no assignment anywhere names it
            else:
                self.store_to(st, v)
            return VarSym(d.name, t, "local", st, d.span, enum=enum, is_const=d.is_const)
        st = self.slot(t, d.name, d.name in self.addr_taken and not self.device)
        sym = VarSym(d.name, t, "local", st, d.span, enum=enum, is_const=d.is_const)
        if d.init is not None:
            self.store_init(st, t, d.init)
        elif isinstance(t, (ArrayType, StructType)):
            self.zero_fill(st, t)
        else:
            sym.needs_init = True
        return sym

    def stmt_StaticAssert(self, s: A.StaticAssert) -> None:
        from .static_assert import check_static_assert
        check_static_assert(s, self._fold, self.error)

    def _fold(self, e: A.Expr):
        try:
            return const_value(e, self.lookup)
        except ConstDivZero as z:
            self.error("M0116", "constant divide by zero", z.span)
            return None

    # ---------------------------------------------------------------- control flow
    def stmt_Return(self, s: A.Return) -> None:
        ret = self.fn.ret
        if s.value is None:
            if ret != VOID:
                self.error("E0208", f"`return` needs a value of type {describe(ret)}",
                           s.span)
                self.b.unreachable()
            elif not any(self.defer_frames):
                self.b.ret()
        elif ret == VOID:
            self.error("E0208", f"`{self.sym.name}` returns no value", s.value.span)
            self.b.ret()
        else:
            self.return_value(self.rvalue(s.value, ret), s)
            self.assigned = None
            return
        if any(self.defer_frames) and not self.b.terminated:
            self.run_defers(0, False)
            self.b.ret()
        self.assigned = None

    def stmt_If(self, s: A.If) -> None:
        c = self.cond(s.cond)
        then_b, end_b = self.new_block("if.then"), self.new_block("if.end")
        else_b = self.new_block("if.else") if s.else_ is not None else end_b
        self.b.cbr(c, then_b, else_b)
        before = None if self.assigned is None else set(self.assigned)
        self.b.position_at_end(then_b)
        self.lower_stmt_safe(s.then)
        self.goto(end_b)
        after_then = self.assigned
        self.assigned = None if before is None else set(before)
        if s.else_ is not None:
            self.b.position_at_end(else_b)
            self.lower_stmt_safe(s.else_)
            self.goto(end_b)
        after_else = self.assigned
        if after_then is None:
            self.assigned = after_else
        elif after_else is None:
            self.assigned = after_then
        else:
            self.assigned = after_then & after_else
        self.b.position_at_end(end_b)

    def _loop(self, label, cond_expr, body, step=None, cond_b=None,
              unroll: int | None = None) -> None:
        from .lower_fn import LoopCtx
        cond_b = cond_b or self.new_block("loop.cond")
        body_b, end_b = self.new_block("loop.body"), self.new_block("loop.end")
        step_b = self.new_block("loop.step") if step is not None else cond_b
        ssa = self.b.ssa
        if ssa is not None:
            ssa.defer_seal(cond_b)          # the back edges come after the body
        self.goto(cond_b)
        self.b.position_at_end(cond_b)
        before = None if self.assigned is None else set(self.assigned)
        always = cond_expr is None or self.const_int(cond_expr) not in (None, 0)
        if cond_expr is None:
            self.b.br(body_b)
        else:
            test = self.b.cbr(self.cond(cond_expr), body_b, end_b, span=cond_expr.span)
            if unroll:                      # a directive for the optimizer's unroll pass
                test.attrs["unroll"] = unroll
        ctx = LoopCtx(label, end_b, step_b, defer_depth=len(self.defer_frames))
        self.loops.append(ctx)
        self.b.position_at_end(body_b)
        try:
            self.lower_stmt_safe(body)
        finally:
            self.loops.pop()
        self.goto(step_b)
        if step is not None:
            self.b.position_at_end(step_b)
            self.assigned = None if before is None else set(before)
            step()
            self.goto(cond_b)
        if ssa is not None:
            ssa.seal(cond_b)
        self.assigned = None if (always and not ctx.broke) or before is None else before
        self.b.position_at_end(end_b)

    def stmt_While(self, s: A.While) -> None:
        self._loop(s.label, s.cond, s.body)

    def stmt_For(self, s: A.For) -> None:
        saved = self.scope
        self.scope = saved.child()
        try:
            if s.init is not None:
                self.lower_stmt(s.init)
            step = (lambda: self.lower_stmt_safe(s.step)) if s.step is not None \
                else (lambda: None)
            self._loop(s.label, s.cond, s.body, step)
        finally:
            self.scope = saved

    def stmt_ForRange(self, s: A.ForRange) -> None:
        saved = self.scope
        self.scope = saved.child()
        try:
            self._for_range(s)
        finally:
            self.scope = saved

    def _for_range(self, s: A.ForRange) -> None:
        if s.type is not None:
            t = self.ctx.resolve_type(s.type)
        elif self.untyped(s.lo) and not self.untyped(s.hi):
            t = self.value(s.hi, None).type
        else:
            t = self.value(s.lo, None).type if not self.untyped(s.lo) else I32
        if not t.is_int:
            raise self.fail("E0201", f"range loop variable must be an integer, not "
                            f"{describe(t)}", s.span)
        st = self.slot(t, s.var, s.var in self.addr_taken and not self.device)
        self.store_to(st, self.rvalue(s.lo, t))
        sym = VarSym(s.var, t, "local", st, s.span)
        self.scope.names[s.var] = sym
        unroll = self._unroll_hint(s)
        pred = "<=" if s.inclusive else "<"
        cond = A.Binary(pred, A.Name(s.var, span=s.span), s.hi, span=s.hi.span)

        def step() -> None:
            one = self.b.const(t, 1)
            self.store_to(st, self.b.add(self.load_slot(st), one))
        self._loop(s.label, cond, s.body, step, unroll=unroll)

    def _unroll_hint(self, s: A.ForRange) -> int | None:
        """The count n of an `@unroll(n)` range loop (2..16), else None. The loop is lowered
        plainly with the count on its exit test; the optimizer's unroll pass (opt/unroll.py,
        run at every optimisation level when a directive is present) unrolls it fully when
        its trip count is a constant of at most n."""
        attr = next((a for a in s.attrs if a.name == "unroll"), None)
        if attr is None:
            return None
        n = attr.args[0] if attr.args else 16
        if not 2 <= n <= 16:
            self.error("E0011", f"@unroll({n}): the unroll count must be in 2..16", attr.span)
            return None
        return n

    def _find_loop(self, s, want_continue: bool):
        for ctx in reversed(self.loops):
            if s.label is not None:
                if ctx.label == s.label and ctx.cont is not None:
                    return ctx
                continue
            if want_continue and ctx.cont is None:
                continue
            return ctx
        kw = "continue" if want_continue else "break"
        what = f"no enclosing loop labelled `{s.label}`" if s.label else \
            f"`{kw}` outside of a loop" + ("" if want_continue else " or switch")
        raise self.fail("E0010", what, s.span)

    def stmt_Break(self, s: A.Break) -> None:
        ctx = self._find_loop(s, False)
        ctx.broke = True
        self.run_defers(ctx.defer_depth, False)
        self.b.br(ctx.brk)
        self.assigned = None

    def stmt_Continue(self, s: A.Continue) -> None:
        ctx = self._find_loop(s, True)
        self.run_defers(ctx.defer_depth, False)
        self.b.br(ctx.cont)
        self.assigned = None

    # ---------------------------------------------------------------- switch
    def stmt_Switch(self, s: A.Switch) -> None:
        from .lower_fn import LoopCtx
        subj = self.value(s.subject, None)
        self._subj_bool = subj.type == BOOL
        if subj.type == BOOL or (subj.type.is_int and subj.type.bits < 32):
            subj = self.b.convert(subj, I32)    # C promotion: `case 300` never matches a uint8
        if not subj.type.is_int:
            raise self.fail("E0201", f"switch needs an integer, bool or enum, not "
                            f"{describe(subj.type)}", s.subject.span)
        covered = self._switch_tests(s, subj)
        end_b = self.new_block("switch.end")
        self._switch_exhaustive(s, covered)
        bodies = self._switch_bodies
        default = next((bodies[i] for i, c in enumerate(s.cases) if c.is_default), end_b)
        self.goto(default)
        before = None if self.assigned is None else set(self.assigned)
        ctx = LoopCtx(None, end_b, None, defer_depth=len(self.defer_frames))
        self.loops.append(ctx)
        reach_end = s.default is None and not self._exhaustive
        try:
            for i, case in enumerate(s.cases):
                self.b.position_at_end(bodies[i])
                self.assigned = None if before is None else set(before)
                self.lower_block_stmts(case.body, self.scope.child())
                if i == len(s.cases) - 1 and not self.b.terminated:
                    reach_end = True
                self.goto(bodies[i + 1] if i + 1 < len(bodies) else end_b)
        finally:
            self.loops.pop()
        self.assigned = before if (reach_end or ctx.broke) else None
        self.b.position_at_end(end_b)

    def _switch_tests(self, s: A.Switch, subj) -> set[int]:
        t = subj.type
        self._switch_bodies = [self.new_block("case") for _ in s.cases]
        seen: set[int] = set()
        for i, case in enumerate(s.cases):
            for v in case.values:
                k = self._case_const(v, seen)
                nxt = self.new_block("case.next")
                self.b.cbr(self.b.cmp("eq", subj, self.b.const(t, k)),
                           self._switch_bodies[i], nxt)
                self.b.position_at_end(nxt)
            for r in case.ranges:
                lo, hi = self._case_const(r.lo, None), self._case_const(r.hi, None)
                if hi - lo < 4096:
                    seen.update(range(lo, hi + 1))
                mid, nxt = self.new_block("case.range"), self.new_block("case.next")
                self.b.cbr(self.b.cmp("ge", subj, self.b.const(t, lo)), mid, nxt)
                self.b.position_at_end(mid)
                self.b.cbr(self.b.cmp("le", subj, self.b.const(t, hi)),
                           self._switch_bodies[i], nxt)
                self.b.position_at_end(nxt)
        return seen

    def _case_const(self, e: A.Expr, seen) -> int:
        v = self.const_int(e)
        if v is None:
            raise self.fail("E0014", "case value must be a compile-time integer constant",
                            e.span)
        if seen is not None:
            if v in seen:
                self.error("E0014", f"duplicate case value {v}", e.span)
            seen.add(v)
        return v

    def _switch_exhaustive(self, s: A.Switch, covered: set[int]) -> None:
        self._exhaustive = False
        if s.default is not None:
            return
        enum = self.enum_of(s.subject)
        is_bool = self._subj_bool
        if enum is not None:
            values = {sym.storage: n for sc in (self.ctx.public, self.ctx.globals)
                      for n, sym in sc.names.items()     # its module's scope, then public
                      if isinstance(sym, VarSym) and sym.enum == enum and sym.kind == "const"}
            missing = [n for v, n in values.items() if v not in covered]
            if missing:
                self.error("E0015", f"switch over enum `{enum}` is not exhaustive (missing "
                           f"{', '.join(sorted(missing))}); add the cases or `default`",
                           s.span)
            self._exhaustive = not missing
        elif is_bool:
            if not {0, 1} <= covered:
                self.error("E0015", "switch over bool must cover true and false or have "
                           "`default`", s.span)
            self._exhaustive = {0, 1} <= covered
