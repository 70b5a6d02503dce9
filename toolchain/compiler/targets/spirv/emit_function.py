"""Per-function SPIR-V emission state: value ids, blocks, temporaries, op dispatch.

A `FnEmitter` walks one IR function's blocks in reverse postorder (so every block follows
its dominators, as SPIR-V requires; unreachable blocks are dropped) and hands each
instruction to the lowering registered for its op in `LOWER` (filled by the emit_* modules).
Lowerings append to `self.cur`, the current SPIR-V block; one that needs control flow of
its own (the async-copy loop) opens new blocks with `new_block()`/`switch()`, and later IR
blocks are appended after them. Function-storage variables (locals, allocas, private
arrays, conversion temporaries) are placed at the top of the entry block by the writer.
Invariant: an IR value is defined (`define`) exactly once, before any use is emitted.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ...ir.cfg import reverse_postorder
from ...ir.module import Block, Const, Function, Global, Instr, Local, Param, Undef
from ...ir.types import BOOL, FloatType, IntType, PtrType, Type
from . import capabilities as caps
from .module import Block as SpvBlock

if TYPE_CHECKING:
    from .emit import Context

LOWER: dict[str, Callable[["FnEmitter", Instr], None]] = {}


def register(table: dict) -> None:
    LOWER.update(table)


class FnEmitter:
    def __init__(self, ctx: "Context", fn: Function, spv_fn, param_ids: list[int]):
        self.ctx, self.fn, self.spv = ctx, fn, spv_fn
        self.m, self.types = ctx.m, ctx.types
        self.vals: dict[int, int] = {}
        self.labels: dict[int, SpvBlock] = {}
        self.locals: dict[int, int] = {}
        self.cur: SpvBlock | None = None
        self.builtins_used: set[int] = set()
        self.callees: list[Function] = []
        self.dynamic_base: int | None = None      # hidden Workgroup arena param (kernels)
        self.dynamic_base_type: int | None = None
        for p, pid in zip(fn.params, param_ids):
            self.vals[id(p)] = pid

    # ---- values -----------------------------------------------------------------------
    def val(self, v) -> int:
        """The id of an IR operand, materialising constants/globals on first use."""
        key = id(v)
        if key in self.vals:
            return self.vals[key]
        if isinstance(v, Const):
            return self.const(v.type, v.value)
        if isinstance(v, Undef):
            # Module-scope OpUndef: valid wherever the value is used.
            rid = self.m._unique("OpUndef", self.types.value(v.type))
            self.vals[key] = rid
            return rid
        if isinstance(v, Global):
            return self.ctx.global_var(v)
        if isinstance(v, Function):
            raise caps.unsupported(_Spanned(self.fn.span), f"the address of function "
                                   f"`{v.name}`")
        if isinstance(v, (Instr, Param)):
            raise caps.internal(KeyError(f"{v!r} used before its definition"), self.fn.name)
        raise caps.internal(TypeError(f"unknown operand {v!r}"), self.fn.name)

    def define(self, ins: Instr, rid: int) -> None:
        self.vals[id(ins)] = rid

    def const(self, t: Type, value) -> int:
        if t.is_ptr:
            return self.m.const_null(self.types.value(t))
        if t == BOOL:
            return self.m.const(self.types.bool(), bool(value))
        if isinstance(t, (IntType, FloatType)):
            return self.m.const(self.types.value(t), value)
        raise caps.internal(TypeError(f"no constant of type {t}"), self.fn.name)

    def c_u32(self, value: int) -> int:
        return self.m.const(self.types.u32(), value)

    def c_u64(self, value: int) -> int:
        return self.m.const(self.types.u64(), value)

    def c_int(self, bits: int, value: int) -> int:
        return self.m.const(self.types.int(bits), value)

    def c_f32(self, value: float) -> int:
        return self.m.const(self.types.f32(), value)

    # ---- instructions and blocks -------------------------------------------------------
    def op(self, opname: str, *args) -> int | None:
        assert self.cur is not None
        return self.cur.op(opname, *args)

    def ext(self, result_type: int, name: str, *args) -> int:
        """OpExtInst from the OpenCL.std extended instruction set."""
        return self.op("OpExtInst", result_type, self.ctx.std(), name, *args)

    def new_block(self) -> SpvBlock:
        """A fresh block appended to the function now (after the current one)."""
        blk = SpvBlock(self.spv, self.m.new_id())
        self.spv.blocks.append(blk)
        return blk

    def switch(self, blk: SpvBlock) -> None:
        self.cur = blk

    def label(self, blk: Block) -> int:
        return self.labels[id(blk)].id

    def temp_var(self, pointee_id: int) -> int:
        """A Function-storage variable (entry block) holding one value of `pointee_id`."""
        return self.spv.local_variable(self.m.type_pointer("Function", pointee_id))

    def local_var(self, loc: Local) -> int:
        if id(loc) not in self.locals:
            self.locals[id(loc)] = self.temp_var(self.types.memory(loc.type))
        return self.locals[id(loc)]

    def builtin(self, name: str, type_id: int) -> int:
        var = self.ctx.builtin(name, type_id)
        self.builtins_used.add(var)
        return var

    # ---- the walk ----------------------------------------------------------------------
    def emit_body(self, prologue: Callable[["FnEmitter"], None] | None = None) -> None:
        order = reverse_postorder(self.fn)
        for blk in order:
            self.labels[id(blk)] = SpvBlock(self.spv, self.m.new_id())
        for i, blk in enumerate(order):
            sblk = self.labels[id(blk)]
            self.spv.blocks.append(sblk)
            self.cur = sblk
            if i == 0 and prologue is not None:
                prologue(self)
            for ins in blk.instrs:
                self.emit_instr(ins)

    def emit_instr(self, ins: Instr) -> None:
        lower = LOWER.get(ins.op)
        if lower is None:
            if caps.is_tensor_op(ins.op):
                raise caps.unsupported(ins, f"tensor operation {ins.op} (no cooperative-"
                                       "matrix capability)")
            raise caps.unsupported(ins, f"operation {ins.op}")
        lower(self, ins)


class _Spanned:
    """Adapter so function-level diagnostics can reuse the per-op helpers."""

    def __init__(self, span):
        self.span = span


def pointer_space(p) -> str:
    t = p.type
    return t.space if isinstance(t, PtrType) else "generic"
