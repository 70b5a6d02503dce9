"""Selection of calls, returns, incoming parameters and the host `gpu.launch`.

Argument set-up order matters because values come from slots and scratch registers are few:
stack arguments first (they may call memcpy), then INTEGER registers, then SSE registers
(constants go through r11), then the indirect target into r10 and `al` = SSE registers used
(varargs-safe for printf and friends). Results are stored from rax/rdx/xmm0/xmm1 into the
result slot, and narrow integers re-extended (the ABI leaves upper bits undefined).

gpu.launch (LANGUAGE.md §9): one cell per argument with the argument's natural size, an
int64[nargs] array of cell addresses, then
mtlc_gpu_launch_checked(handle, gx, gy, gz, bx, by, bz, shared, stream, params, nargs)
with params = 0 when nargs = 0; a typed launch gets its handle from
mtlc_gpu_kernel_handle("K") first.
"""
from __future__ import annotations

from ...ir.module import Const, Function
from ...ir.types import I32, I64
from . import abi_sysv
from .abi_sysv import INTEGER, SHADOW, SSE, Layout
from ..common.frame import Frame
from ..common.host import (KERNEL_HANDLE, LAUNCH, LAUNCH_PARAMS, LaunchSlot as _Slot,
                           RuntimeSymbolMixin)
from .isel_mem import store_scalar
from .isel_values import normalize
from .operands import Imm, Mem, Sym
from .regs import EAX, R10, RAX, RBP, RSP, resize



def reserve_call_space(frame: Frame, ins, abi=abi_sysv) -> None:
    """frame.plan hook: outgoing stack bytes, by-reference argument copies and launch cells
    for `ins`."""
    if ins.op in ("call", "call_indirect"):
        lay = _call_layout(ins, abi)
        frame.need_outgoing(lay.stack_bytes)
        frame.scratch[id(ins)] = [frame.alloc(a.type.size, a.type.align) if loc.byref else 0
                                  for loc, a in zip(lay.args, ins.operands[1:])]
    elif ins.op == "gpu.launch":
        frame.need_outgoing(abi.layout(LAUNCH_PARAMS, I32).stack_bytes)
        args = ins.operands[9:]
        cells = [frame.alloc(a.type.size, a.type.align) for a in args]
        array = frame.alloc(8 * len(args)) if args else 0
        frame.scratch[id(ins)] = (cells, array, frame.alloc(8))


def _call_layout(ins, abi=abi_sysv) -> Layout:
    args = ins.operands[1:]
    return abi.layout([a.type for a in args], ins.type)


class CallMixin(RuntimeSymbolMixin):
    def _set_up_args(self, lay: Layout, args: list, sret=None, copies=None) -> None:
        """Copies for by-reference aggregates and stack arguments first (a big copy calls
        memcpy), then the hidden result pointer, then INTEGER, SSE and SHADOW registers."""
        e = self.asm.emit
        copies = copies or [0] * len(args)
        for loc, v, at in zip(lay.args, args, copies):
            if loc.byref:
                self.copy(RBP, at, RBP, self.frame.offset(v), v.type.size)
        for loc, v, at in zip(lay.args, args, copies):
            if loc.stack is None:
                continue
            if loc.byref:
                e("lea", RAX, Mem(RBP, disp=at))
                e("mov", Mem(RSP, disp=loc.stack), RAX)
            elif v.type.is_aggregate:
                self.copy(RSP, loc.stack, RBP, self.frame.offset(v), v.type.size)
            else:
                self.load_bits(v, RAX)
                e("mov", Mem(RSP, disp=loc.stack), RAX)
        if sret is not None:  # after the stack copies: a big copy calls memcpy
            e("lea", self.abi.SRET_REG, self.slot(sret))
        for kind in (INTEGER, SSE, SHADOW):
            for loc, v, at in zip(lay.args, args, copies):
                for k, (cls, reg) in enumerate(loc.regs):
                    if cls != kind:
                        continue
                    if loc.byref:
                        e("lea", reg, Mem(RBP, disp=at))
                    elif v.type.is_aggregate:
                        mn = "mov" if cls == INTEGER else "movsd"
                        e(mn, reg, self.slot(v, 8 * k))
                    elif cls == SSE:
                        self.load_xmm(v, reg)
                    else:
                        self.load_bits(v, reg)

    def _emit_call(self, ins, target, args: list) -> None:
        lay = self.abi.layout([a.type for a in args], ins.type)
        self._set_up_args(lay, args, ins if lay.ret.kind == "memory" else None,
                          self.frame.scratch.get(id(ins)))
        if target is None:
            self.load_bits(ins.operands[0], R10)
            target = R10
        callee = ins.operands[0]
        if not (isinstance(callee, Function) and not callee.is_extern):
            self.asm.emit("mov", EAX, Imm(lay.sse_count))   # al: a varargs callee reads it
        self.asm.emit("call", target)
        self._store_result(ins, lay)

    def _tail_self_call(self, ins, lay: Layout) -> bool:
        """`ret f(args)` inside f: the arguments go to the parameters' homes and control
        jumps back to the body (a loop instead of a frame per call). Only for register
        arguments and a frame with nothing the prologue zeroes (allocas keep their memory)."""
        fn, nxt = self.fn, self.next_ins
        if ins.operands[0] is not fn or nxt is None or nxt.op != "ret" or \
                list(nxt.operands) != ([ins] if ins.type.size else []) or \
                self.use_count.get(id(ins), 0) != (1 if ins.type.size else 0):
            return False
        if self.frame.zeroed or lay.stack_bytes or lay.ret.kind == "memory" or \
                any(a.byref or a.stack is not None for a in lay.args) or \
                any(p.type.is_aggregate for p in fn.params):
            return False
        self._set_up_args(lay, ins.operands[1:])
        self.save_params(fn, lay)
        self.asm.emit("jmp", Sym(self.body_label))
        self.tail_ret = nxt
        return True

    def _store_result(self, ins, lay: Layout) -> None:
        if lay.ret.kind != "regs":
            return
        e = self.asm.emit
        if ins.type.is_aggregate:
            for k, (cls, reg) in enumerate(lay.ret.regs):
                e("mov" if cls == INTEGER else "movsd", self.slot(ins, 8 * k), reg)
        elif ins.type.is_float:
            self.store_xmm(ins, lay.ret.regs[0][1])
        else:
            self.store_bits(ins, RAX)

    def op_call(self, ins) -> None:
        fn: Function = ins.operands[0]
        if self.allocate and fn is self.fn and self._tail_self_call(
                ins, self.abi.layout([a.type for a in ins.operands[1:]], ins.type)):
            return
        self._emit_call(ins, Sym(fn.symbol), ins.operands[1:])

    def op_call_indirect(self, ins) -> None:
        self._emit_call(ins, None, ins.operands[1:])

    # -- function entry and return ------------------------------------------------------------
    def save_params(self, fn: Function, lay: Layout) -> None:
        e = self.asm.emit
        if lay.ret.kind == "memory":
            e("mov", Mem(RBP, disp=self.frame.sret), self.abi.SRET_REG)
        for p, loc in zip(fn.params, lay.args):
            for k, (cls, reg) in enumerate(loc.regs):
                if cls == SHADOW:
                    continue
                if loc.byref:   # park the copy's address in the slot until the copy below
                    e("mov", self.slot(p), reg)
                elif p.type.is_aggregate:
                    e("mov" if cls == INTEGER else "movsd", self.slot(p, 8 * k), reg)
                elif cls == INTEGER:
                    self._canonical_param(p, reg)
                elif self.xmm(p) is not None:
                    e("movaps", self.xmm(p), reg)
                elif id(p) in self.regs:
                    e("movd" if p.type.size == 4 else "movq",
                      resize(self.regs[id(p)], p.type.size * 8), reg)
                else:
                    e("movsd", self.slot(p), reg)
                    if p.type.size == 4:
                        e("mov", Mem(RBP, disp=self.frame.offset(p) + 4, size=32), Imm(0))
        # stack and by-reference parameters last: a big aggregate copy calls memcpy,
        # clobbering argument registers
        for p, loc in zip(fn.params, lay.args):
            if loc.byref:
                src = self.slot(p) if loc.stack is None else Mem(RBP, disp=16 + loc.stack)
                e("mov", RAX, src)
                self.copy(RBP, self.frame.offset(p), RAX, 0, p.type.size)
                continue
            if loc.stack is None:
                continue
            src = 16 + loc.stack
            if p.type.is_aggregate:
                self.copy(RBP, self.frame.offset(p), RBP, src, p.type.size)
            else:
                e("mov", RAX, Mem(RBP, disp=src))
                self._canonical_param(p, RAX)

    def _canonical_param(self, p, reg) -> None:
        normalize(self.asm, p.type, reg)
        self.put_bits(p, reg)

    def op_ret(self, ins) -> None:
        e = self.asm.emit
        if self.tail_ret is ins:     # after a tail self-call's jump: unreachable
            return
        if ins.operands:
            v = ins.operands[0]
            lay = self.abi.layout([], v.type)
            if lay.ret.kind == "memory":
                e("mov", R10, Mem(RBP, disp=self.frame.sret))
                self.copy(R10, 0, RBP, self.frame.offset(v), v.type.size)
                e("mov", RAX, Mem(RBP, disp=self.frame.sret))
            elif v.type.is_aggregate:
                for k, (cls, reg) in enumerate(lay.ret.regs):
                    e("mov" if cls == INTEGER else "movsd", reg, self.slot(v, 8 * k))
            elif v.type.is_float:
                self.load_xmm(v, lay.ret.regs[0][1])
            else:
                self.load_bits(v, RAX)
        for reg, off in self.saved:
            e("mov", reg, Mem(RBP, disp=off))
        e("leave")
        e("ret")

    # -- host launch --------------------------------------------------------------------------
    def op_gpu_launch(self, ins) -> None:
        e = self.asm.emit
        cells, array, hslot = self.frame.scratch[id(ins)]
        args = ins.operands[9:]
        for v, cell, k in zip(args, cells, range(len(args))):
            if v.type.is_aggregate:
                self.copy(RBP, cell, RBP, self.frame.offset(v), v.type.size)
            else:
                self.load_bits(v, RAX)
                store_scalar(self.asm, v.type.size, Mem(RBP, disp=cell), RAX)
            e("lea", RAX, Mem(RBP, disp=cell))
            e("mov", Mem(RBP, disp=array + 8 * k), RAX)
        handle = ins.operands[0]
        kernel = ins.attrs.get("kernel")
        if kernel:
            name = self.cstring(kernel.encode())
            e("lea", self.abi.C_ARGS[0], Mem(sym=name))
            e("mov", EAX, Imm(0))
            e("call", Sym(self.runtime_symbol(KERNEL_HANDLE)))
            e("mov", Mem(RBP, disp=hslot), RAX)
            handle = _Slot(hslot)
        params = _Slot(array, lea=True) if args else Const(I64, 0)
        values = [handle, *ins.operands[1:9], params, Const(I32, len(args))]
        lay = self.abi.layout(LAUNCH_PARAMS, I32)
        for loc, v, t in zip(lay.args, values, LAUNCH_PARAMS):
            dest = Mem(RSP, disp=loc.stack) if loc.stack is not None else None
            reg = RAX if dest is not None else loc.regs[0][1]
            if isinstance(v, _Slot):
                e("lea" if v.lea else "mov", reg, Mem(RBP, disp=v.offset))
            else:
                self.load_bits(v, reg)
            if dest is not None:
                e("mov", dest, reg)
        e("mov", EAX, Imm(0))
        e("call", Sym(self.runtime_symbol(LAUNCH)))

