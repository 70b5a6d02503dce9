"""x86-64 instruction selection for one IR function (host code), into an Assembler.

Design: every IR value lives in a frame slot (frame.py); each instruction loads its operands
into fixed scratch registers, computes, and stores its result. No register allocation, so
every op is selected in isolation and correctness is local. Peepholes: a `br`/`cbr` to the
block laid out next falls through; zero constants are `xor`.

    sel = FunctionSelector(asm, module, cstring)
    sel.select(fn)        # emits the function's symbol, prologue, blocks, epilogues

Invariants: rsp is 16-byte aligned after the prologue and never moves until `leave`; blocks
are laid out in IR order, each starting at its own local label.

Under -O (`allocate=True`), regalloc.py keeps the hottest scalar values in registers
instead of their slots (`loc(v)`): rbx/r12-r15 (the prologue saves those used), r8-r10/
rsi/rdi and, on SysV, xmm8-15 for values live across no call (`calls_out`). Handlers then
compute in the result's register from operand registers (`gpr`/`xmm`/`source`), a ptradd
feeding only the next load/store becomes its address (`folded`), and a tail self-call
jumps to `body_label`. Every handler reads all its operands before writing its result, so
a result may share a register with an operand that dies there (regalloc.py).

The calling convention is a module (`abi_sysv` by default, `abi_win64` for Windows) with
`layout` and the register roles the selector needs; Win64 adds a stack probe for frames of a
page or more and saves rsi/rdi (callee-saved there, scratch here) in frame slots.
"""
from __future__ import annotations

from ...ir.module import Function
from ..common import regalloc
from ..common.frame import plan
from ..common.isel_blocks import BlockMixin
from . import abi_sysv
from .isel_arith import _INVERSE_CC, ArithMixin
from .isel_call import CallMixin, reserve_call_space
from .isel_fastpath import FastPathMixin
from .isel_mem import MemMixin, folds_into_access, folds_into_float_op
from .isel_values import ValueMixin, ice
from .operands import Imm, Mem, Sym
from .regs import (EAX, R8, R9, R10, R11, R12, R13, R14, R15, RAX, RBP, RBX, RDI, RSI, RSP,
                   XMMS, resize)

# Callee-saved in both SysV and Win64 and never a selector scratch register (regalloc.py).
ALLOCATABLE = (RBX, R12, R13, R14, R15)
# Touched by the selector only where it calls or moves aggregate bytes (argument set-up,
# indirect target, memcpy/memset, inline copies): values live across no such instruction
# may use them (rsi/rdi are callee-saved on Win64, which the prologue saves anyway).
VOLATILE = (R8, R9, R10, RSI, RDI)
XMM_ALLOCATABLE = tuple(XMMS[8:16])   # SysV: all xmm are caller-saved; xmm0/1 are scratch



class FunctionSelector(BlockMixin, ValueMixin, ArithMixin, MemMixin, CallMixin, FastPathMixin):
    ice = staticmethod(ice)

    def __init__(self, asm, module, cstring, abi=abi_sysv, allocate: bool = False) -> None:
        self.asm, self.module, self.cstring, self.abi = asm, module, cstring, abi
        self.allocate = allocate
        self.init_handlers()

    def select(self, fn: Function) -> None:
        abi = self.abi
        self.frame = plan(fn, lambda frame, ins: reserve_call_space(frame, ins, abi))
        self.frame.need_outgoing(abi.SHADOW_SPACE)
        self.folded = self._folded(fn)
        self.regs = self._allocate(fn) if self.allocate else {}
        used = [r for r in ALLOCATABLE if r in self.regs.values()]
        self.saved = [(reg, self.frame.alloc(8))
                      for reg in (*abi.CALLEE_SAVED_SCRATCH, *used)]
        lay = abi.layout([p.type for p in fn.params], fn.ret)
        if lay.ret.kind == "memory":
            self.frame.sret = self.frame.alloc(8)
        self.labels = {id(b): self.asm.new_label("Lb") for b in fn.blocks}
        self.fn, self.tail_ret = fn, None
        self.body_label = self.asm.new_label("Lbody")
        self.asm.section(".text")
        self.asm.align(16)
        public = fn.linkage == "export" or fn.name == "main"
        self.asm.function(fn.symbol, local=not public)
        self.fast_exit(fn, lay)
        self._prologue(fn, lay)
        self.emit_blocks(fn)
        self.asm.end_symbol(fn.symbol)

    def _allocate(self, fn: Function) -> dict:
        abi = self.abi
        entry = set(abi.INT_ARGS)        # the prologue reads argument registers in order
        if any(p.type.is_aggregate for p in fn.params) or \
                any(size > 256 for _, size in self.frame.zeroed):
            entry |= set(VOLATILE) | set(XMM_ALLOCATABLE)   # memcpy/memset in the prologue
        floats = XMM_ALLOCATABLE if abi.NAME == "sysv" else ()   # Win64: xmm6-15 are saved
        return regalloc.allocate(fn, ALLOCATABLE, volatile=VOLATILE, float_registers=floats,
                                 clobbers=regalloc.calls_out, entry_clobbers=entry,
                                 folded=self.folded)

    def _folded(self, fn: Function) -> set[int]:
        """ids of the ptradds that become the next load/store's address and of the float
        loads that become the next float operation's memory operand (isel_mem)."""
        uses: dict[int, int] = {}
        for ins in fn.instructions():
            for o in ins.operands:
                uses[id(o)] = uses.get(id(o), 0) + 1
        out = set()
        for block in fn.blocks:
            for ins, nxt in zip(block.instrs, block.instrs[1:]):
                if folds_into_access(ins, nxt, uses.get(id(ins), 0)) or \
                        folds_into_float_op(ins, nxt, uses.get(id(ins), 0)):
                    out.add(id(ins))
        return out

    def _prologue(self, fn: Function, lay) -> None:
        e = self.asm.emit
        e("push", RBP)
        e("mov", RBP, RSP)
        if self.abi.STACK_PROBE and self.frame.size >= 4096:
            self._probe(self.frame.size)
        if self.frame.size:
            e("sub", RSP, Imm(self.frame.size))
        for reg, off in self.saved:
            e("mov", Mem(RBP, disp=off), reg)
        self.save_params(fn, lay)
        for off, size in self.frame.zeroed:
            self.zero(RBP, off, size)
        self.asm.label(self.body_label)    # where a tail self-call jumps (isel_call.py)

    def _probe(self, size: int) -> None:
        """Touch each page below rsp in order (Windows commits the stack one guard page at a
        time; jumping past it faults), as __chkstk does."""
        e = self.asm.emit
        loop = self.asm.new_label("Lprobe")
        e("mov", EAX, Imm(size // 4096))
        e("mov", R11, RSP)
        self.asm.label(loop)
        e("sub", R11, Imm(4096))
        e("test", Mem(R11), R11)
        e("dec", RAX)
        e("jne", Sym(loop))

    # -- control flow -----------------------------------------------------------------------
    def branch_target(self, label: str):
        return Sym(label)

    def op_cbr(self, ins) -> None:
        then, other = ins.targets
        yes = self.take_flags(ins.operands[0])
        if yes is None:
            reg = self.gpr(ins.operands[0])
            if reg is None:
                self.load_bits(ins.operands[0], RAX)
                reg = RAX
            self.asm.emit("test", resize(reg, 32), resize(reg, 32))
            yes = "ne"
        if then is self.next_block:
            self.asm.emit("j" + _INVERSE_CC[yes], Sym(self.labels[id(other)]))
            return
        self.asm.emit("j" + yes, Sym(self.labels[id(then)]))
        self._jump(other)

    def op_unreachable(self, ins) -> None:
        self.asm.emit("ud2")

