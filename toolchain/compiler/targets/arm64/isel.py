"""AArch64 instruction selection for one IR function (host code), into an Assembler.

The x86-64 selector's design on AArch64: every IR value lives in a frame slot (the shared
common/frame.py plan), each instruction loads operands into scratch registers, computes and
stores. Frame: `stp x29, x30, [sp, #-16]!; mov x29, sp; sub sp, sp, #size`; slots lie below
x29, the outgoing argument area at [sp, #0...]; sp stays 16-byte aligned and fixed until the
epilogue (`mov sp, x29; ldp x29, x30, [sp], #16; ret`). A `br`/`cbr` to the next block
falls through. Under -O, regalloc.py keeps the hottest scalar values in x19..x28 (or x14/
x15 when live across no call) instead of their slots (`put`/`load_bits` see to it); the
prologue saves the callee-saved registers used.
"""
from __future__ import annotations

from ...ir.module import Function
from ..common import regalloc
from ..common.frame import plan
from ..common.isel_blocks import BlockMixin
from .abi_aapcs64 import layout
from .isel_arith import A, ArithMixin
from .isel_call import CallMixin, reserve_call_space
from .isel_mem import MemMixin
from .encodings import invert
from .isel_values import ValueMixin, ice
from .operands import Imm, Mem, Sym
from .regs import FP, LR, SP, X

MAX_FRAME = 1 << 24
ALLOCATABLE = tuple(X[19:29])   # callee-saved, never selector scratch (regalloc.py)
# Caller-saved and never touched by the selector except through calls (memcpy/memset
# included): values live across no call may use them.
VOLATILE = (X[14], X[15])


class FunctionSelector(BlockMixin, ValueMixin, ArithMixin, MemMixin, CallMixin):
    JUMP = "b"
    ice = staticmethod(ice)

    def __init__(self, asm, module, cstring, allocate: bool = False) -> None:
        self.asm, self.module, self.cstring = asm, module, cstring
        self.allocate = allocate
        self.init_handlers()

    def select(self, fn: Function) -> None:
        self.frame = plan(fn, reserve_call_space)
        if self.frame.size >= MAX_FRAME:
            raise ice(f"the frame of '{fn.name}' ({self.frame.size} bytes) exceeds 16 MiB")
        self.regs = self._allocate(fn) if self.allocate else {}
        self.saved = [(r, self.frame.alloc(8)) for r in ALLOCATABLE if r in self.regs.values()]
        lay = layout([p.type for p in fn.params], fn.ret)
        if lay.ret == "memory":
            self.frame.sret = self.frame.alloc(8)
        self.labels = {id(b): self.asm.new_label("Lb") for b in fn.blocks}
        self.asm.section(".text")
        self.asm.align(16)
        public = fn.linkage == "export" or fn.name == "main"
        self.asm.function(fn.symbol, local=not public)
        self._prologue(fn, lay)
        self.emit_blocks(fn)
        self.asm.end_symbol(fn.symbol)

    def _allocate(self, fn: Function) -> dict:
        entry = ()
        if any(p.type.is_aggregate for p in fn.params) or \
                any(size > 256 for _, size in self.frame.zeroed):
            entry = VOLATILE                        # memcpy/memset in the prologue
        return regalloc.allocate(fn, ALLOCATABLE, volatile=VOLATILE,
                                 clobbers=regalloc.calls_out, entry_clobbers=entry)

    def _prologue(self, fn: Function, lay) -> None:
        e = self.asm.emit
        e("stp", FP, LR, Mem(SP, -16, "pre"))
        e("mov", FP, SP)
        size = self.frame.size
        if size >= 4096:
            e("sub", SP, SP, Imm(size & ~0xFFF))
        if size & 0xFFF:
            e("sub", SP, SP, Imm(size & 0xFFF))
        for reg, off in self.saved:
            self.store_mem(reg, FP, off, 8)
        self.save_params(fn, lay)
        for off, zsize in self.frame.zeroed:
            self.zero(FP, off, zsize)

    # -- control flow -----------------------------------------------------------------------
    def branch_target(self, label: str):
        return Sym(label)

    def op_cbr(self, ins) -> None:
        then, other = ins.targets
        cc = self.take_flags(ins.operands[0])
        if cc is not None:   # b.cond on the compare's flags (invert: the exact negation)
            if then is self.next_block:
                self.asm.emit("b." + invert(cc), Sym(self.labels[id(other)]))
                return
            self.asm.emit("b." + cc, Sym(self.labels[id(then)]))
            self._jump(other)
            return
        self.load_bits(ins.operands[0], A)
        if then is self.next_block:
            self.asm.emit("cbz", A, Sym(self.labels[id(other)]))
            return
        self.asm.emit("cbnz", A, Sym(self.labels[id(then)]))
        self._jump(other)

    def op_unreachable(self, ins) -> None:
        self.asm.emit("udf", Imm(0))
