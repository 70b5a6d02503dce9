"""Per-function lowering driver: parameters, storage choice, final terminators, cleanup.

The statement, expression, GPU and dispatch halves are mixins (lower_stmt.py,
lower_expr.py, lower_gpu.py, lower_dispatch.py) sharing this state:
- `assigned`: ids of VarSyms definitely assigned on the current path, or None when the
  current point is unreachable (after return/break/continue).
- `loops`: stack of LoopCtx for break/continue (switches push one with cont=None).

Storage choice: scalar locals that are never address-taken (`&x`, by name) are ir Locals;
address-taken or aggregate locals are allocas. Parameters that are never assigned nor
address-taken are used directly; others are copied into a slot first.

Error recovery: a diagnostic that makes the rest of a statement meaningless raises Abort,
caught at statement level; lowering continues with the next statement.
"""
from __future__ import annotations

from ...records import dataclass

from . import ast as A
from ..diagnostics import Diagnostic, closest, did_you_mean
from ..ir import IRTypeError
from ..ir.cfg import remove_unreachable
from ..ir.module import Block
from ..ir.ssa_builder import SSABuilder
from ..ir.types import VOID, ArrayType, StructType, Type, ptr
from .lower_checks import ChecksMixin
from .lower_dispatch import DispatchMixin
from .lower_expr import ExprMixin
from .lower_gpu import GpuMixin
from .lower_later import LaterMixin
from .closures import ClosureMixin
from .lower_defer import DeferMixin
from .lower_match import MatchMixin
from .lower_ops import OpsMixin
from .lower_stmt import Abort, StmtMixin   # Abort is defined beside its handler
from .lower_tile import TileMixin
from .scope import FnSym, Scope, VarSym


@dataclass
class LoopCtx:
    label: str | None
    brk: Block
    cont: Block | None              # None for a switch
    broke: bool = False
    defer_depth: int = 0            # defer frames open outside the loop (lower_defer.py)


class FunctionLowerer(StmtMixin, OpsMixin, ExprMixin, GpuMixin, DispatchMixin, ChecksMixin,
                      LaterMixin, MatchMixin, DeferMixin, ClosureMixin, TileMixin):
    def __init__(self, ctx, sym: FnSym):
        self.ctx = ctx
        self.sym = sym
        self.b = ctx.b
        self.fn = sym.fn
        self.decl: A.FnDecl = sym.decl
        self.scope = Scope(ctx.globals)
        self.assigned: set[int] | None = set()
        self.loops: list[LoopCtx] = []
        self.in_kernel = sym.is_kernel
        self.device = sym.is_kernel or (ctx.gpu and (sym.decl.internal_name or sym.name) in ctx.device_fns)
        names = ctx.body_facts(self.decl.body)
        self.addr_taken = names.addr_taken
        self.assigned_names = names.assigned
        self._tmp = 0
        self.defer_frames: list[list] = []      # per open block: pending defers (lower_defer)

    # ---------------------------------------------------------------- diagnostics
    def error(self, code: str, msg: str, span, help: str | None = None) -> None:
        self.ctx.bag.error(code, msg, span, help)

    def near_miss(self, name: str, functions: bool = False) -> str | None:
        """`did you mean ...?` for an unknown name: the closest visible one (a function, for
        a call), if any is close (difflib's ratio 0.75 or more); internal names never."""
        from .scope import FnSym
        seen: set[str] = set()
        s = self.scope
        while s is not None:
            seen.update(n for n, sym in s.names.items()
                        if n[:1].isalpha() and "." not in n and not n.startswith("mtlc_")
                        and (not functions or isinstance(sym, FnSym)))
            s = s.parent
        return did_you_mean(closest(name, seen))

    def fail(self, code: str, msg: str, span, help: str | None = None) -> Abort:
        self.error(code, msg, span, help)
        return Abort()

    def warn(self, code: str, msg: str, span) -> None:
        self.ctx.bag.warning(code, msg, span)

    # ---------------------------------------------------------------- helpers
    def new_block(self, name: str) -> Block:
        return self.b.append_block(self.fn, name)

    def goto(self, target: Block) -> None:
        if not self.b.terminated:
            self.b.br(target)

    def start_dead_block(self) -> None:
        """Continue emitting after a terminator, into a block no edge reaches."""
        self.b.position_at_end(self.new_block("dead"))

    def slot(self, t: Type, name: str, force_memory: bool = False):
        """Storage for a local: an ir Local, or an alloca for aggregates/address-taken."""
        if force_memory or isinstance(t, (ArrayType, StructType)):
            return self.b.alloca(t, name)
        return self.b.local(self.fn, t, name)

    # ---------------------------------------------------------------- driver
    def lower(self) -> None:
        self.b.ssa = SSABuilder() if self.ctx.ssa else None
        try:
            entry = self.new_block("entry")
            self.b.position_at_end(entry)
            self._bind_params()
            self.lower_block_stmts(self.decl.body.stmts, self.scope)
            self._finish()
        except IRTypeError as e:  # a lowering bug: report it located, never a traceback
            self.ctx.bag.add(Diagnostic("E0900", f"internal error lowering "
                                        f"`{self.sym.name}`: {e}", self.decl.span))
        finally:
            self.b.ssa = None

    def _bind_params(self) -> None:
        for p_ast, p in zip(self.decl.params, self.fn.params):
            t = p.type
            enum = self.ctx.enum_of_type(p_ast.type)
            mutable = p.name in self.assigned_names or p.name in self.addr_taken
            if isinstance(t, (ArrayType, StructType)) or mutable:
                force = p.name in self.addr_taken and not self.device
                st = self.slot(t, p.name, force)
                self.store_to(st, p)
                sym = VarSym(p.name, t, "local", st, p_ast.span, enum=enum)
            else:
                sym = VarSym(p.name, t, "param", p, p_ast.span, enum=enum)
            if p.name in self.scope.names:
                self.error("E0103", f"duplicate parameter `{p.name}`", p_ast.span)
            self.scope.names[p.name] = sym

    def _finish(self) -> None:
        if not self.b.terminated:
            if self.fn.ret == VOID:
                self.b.ret()
            else:
                if self.assigned is not None:
                    self.error("E0011", f"function `{self.sym.name}` may reach its end "
                               "without returning a value", self.decl.span)
                self.b.unreachable()
        self.tile_finish()              # shared-tile copies still in flight (tile_frag.py)
        ssa = self.b.ssa
        if ssa is not None:
            ssa.finish(self.fn)
        remove_unreachable(self.fn)         # (and, in SSA mode, the phi arms from them)



class LambdaLowerer(FunctionLowerer):
    """A lifted lambda (closures.py): its captured names are the fields of the record passed
    as the hidden first parameter; folded local constants are copied in."""

    def __init__(self, ctx, sym: FnSym, env_t, captured: list[str], consts: dict):
        super().__init__(ctx, sym)
        self.env_t, self.captured, self.consts = env_t, captured, consts

    def _bind_params(self) -> None:
        self.scope.names.update(self.consts)
        super()._bind_params()
        if self.env_t is None:
            return
        env = self.b.bitcast(self.fn.params[0], ptr(self.env_t))
        for i, name in enumerate(self.captured):
            field = self.b.fieldptr(env, i + 1)
            self.scope.names[name] = VarSym(name, self.env_t.fields[i + 1][1], "local",
                                            field, self.decl.span)
