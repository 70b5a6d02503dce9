"""AArch64 selection of calls, function entry/return and `gpu.launch` (AAPCS64, see
abi_aapcs64.py).

Argument set-up order: by-reference copies and stack arguments first (they may call memcpy),
then x8 for an indirect result, then register pieces; the indirect target is loaded into
x9 last. Results are stored from x0/x1/v0..v3 and narrow integers re-extended (AAPCS64 leaves
their upper bits unspecified). The callee saves register parameters first, then copies
by-reference and stack parameters (which may call memcpy and clobber argument registers).

gpu.launch: as on x86-64 (isel_call.py there): one cell per argument at its natural size, an
int64 array of cell addresses, then mtlc_gpu_launch_checked(handle, grid, block, shared,
stream, params, nargs), with a typed launch's handle from mtlc_gpu_kernel_handle("K").
"""
from __future__ import annotations

from ...ir.module import Const, Function
from ...ir.types import I32, I64
from ..common.host import KERNEL_HANDLE, LAUNCH, LAUNCH_PARAMS, RuntimeSymbolMixin
from ..common.host import LaunchSlot as _Slot
from .abi_aapcs64 import FLOAT, INTEGER, Layout, layout
from .isel_arith import A
from .operands import Mem, Sym
from .regs import FP, INDIRECT_RESULT, IP0, LR, SP, X


def _call_layout(ins) -> Layout:
    return layout([a.type for a in ins.operands[1:]], ins.type)


def reserve_call_space(frame, ins) -> None:
    """frame.plan hook: outgoing stack bytes, by-reference copies and launch cells."""
    if ins.op in ("call", "call_indirect"):
        lay = _call_layout(ins)
        frame.need_outgoing(lay.stack_bytes)
        frame.scratch[id(ins)] = [frame.alloc(a.type.size, a.type.align) if loc.byref else 0
                                  for loc, a in zip(lay.args, ins.operands[1:])]
    elif ins.op == "gpu.launch":
        frame.need_outgoing(layout(LAUNCH_PARAMS, I32).stack_bytes)
        args = ins.operands[9:]
        cells = [frame.alloc(a.type.size, a.type.align) for a in args]
        array = frame.alloc(8 * len(args)) if args else 0
        frame.scratch[id(ins)] = (cells, array, frame.alloc(8))


class CallMixin(RuntimeSymbolMixin):
    arg0, arg1, arg2 = X[0], X[1], X[2]

    def call_symbol(self, name: str) -> None:
        self.asm.emit("bl", Sym(name))

    def _set_up_args(self, lay: Layout, args: list, copies: list[int], sret=None) -> None:
        for loc, v, copy_at in zip(lay.args, args, copies):
            if loc.byref:
                self.copy(FP, copy_at, FP, self.off(v), v.type.size)
        for loc, v, copy_at in zip(lay.args, args, copies):
            if loc.stack is None:
                continue
            if loc.byref:
                self.add_offset(IP0, FP, copy_at)
                self.store_mem(IP0, SP, loc.stack, 8)
            elif v.type.is_aggregate:
                self.copy(SP, loc.stack, FP, self.off(v), v.type.size)
            else:
                self.load_bits(v, IP0)
                self.store_mem(IP0, SP, loc.stack, 8)
        if sret is not None:
            self.add_offset(INDIRECT_RESULT, FP, self.off(sret))
        for loc, v, copy_at in zip(lay.args, args, copies):
            for p in loc.pieces:
                if loc.byref:
                    self.add_offset(p.reg, FP, copy_at)
                elif v.type.is_aggregate:
                    self.load_mem(p.reg, FP, self.off(v) + p.offset, p.size)
                elif p.cls == FLOAT:
                    self.load_fp(v, p.reg)
                else:
                    self.load_bits(v, p.reg)

    def _emit_call(self, ins, target, args: list) -> None:
        lay = layout([a.type for a in args], ins.type)
        copies = self.frame.scratch[id(ins)]
        self._set_up_args(lay, args, copies, ins if lay.ret == "memory" else None)
        if target is None:
            self.load_bits(ins.operands[0], A)
            self.asm.emit("blr", A)
        else:
            self.asm.emit("bl", target)
        self._store_result(ins, lay)

    def _store_result(self, ins, lay: Layout) -> None:
        if lay.ret != "regs":
            return
        if ins.type.is_aggregate:
            for p in lay.ret_pieces:
                self.store_mem(p.reg, FP, self.off(ins) + p.offset, p.size)
        elif ins.type.is_float:
            self.store_fp(ins, lay.ret_pieces[0].reg)
        else:
            self.store_bits(ins, X[0])

    def op_call(self, ins) -> None:
        fn: Function = ins.operands[0]
        self._emit_call(ins, Sym(fn.symbol), ins.operands[1:])

    def op_call_indirect(self, ins) -> None:
        self._emit_call(ins, None, ins.operands[1:])

    # -- function entry and return ------------------------------------------------------------
    def save_params(self, fn: Function, lay: Layout) -> None:
        if lay.ret == "memory":
            self.store_mem(INDIRECT_RESULT, FP, self.frame.sret, 8)
        for prm, loc in zip(fn.params, lay.args):
            for p in loc.pieces:
                if loc.byref:   # the pointer, parked in the slot until phase two
                    self.store_mem(p.reg, FP, self.off(prm), 8)
                elif prm.type.is_aggregate:
                    self.store_mem(p.reg, FP, self.off(prm) + p.offset, p.size)
                elif p.cls == INTEGER:
                    self.normalize(prm.type, p.reg)
                    self.put(prm, p.reg)
                else:
                    self.store_fp(prm, p.reg)
        for prm, loc in zip(fn.params, lay.args):
            size = prm.type.size
            if loc.byref:
                src = self.off(prm) if loc.stack is None else 16 + loc.stack
                self.load_mem(A, FP, src, 8)
                self.copy(FP, self.off(prm), A, 0, size)
            elif loc.stack is None:
                continue
            elif prm.type.is_aggregate:
                self.copy(FP, self.off(prm), FP, 16 + loc.stack, size)
            else:
                self.load_mem(A, FP, 16 + loc.stack, 8)
                self.normalize(prm.type, A)
                self.put(prm, A)

    def op_ret(self, ins) -> None:
        if ins.operands:
            v = ins.operands[0]
            lay = layout([], v.type)
            if lay.ret == "memory":
                self.load_mem(A, FP, self.frame.sret, 8)
                self.copy(A, 0, FP, self.off(v), v.type.size)
            elif v.type.is_aggregate:
                for p in lay.ret_pieces:
                    self.load_mem(p.reg, FP, self.off(v) + p.offset, p.size)
            elif v.type.is_float:
                self.load_fp(v, lay.ret_pieces[0].reg)
            else:
                self.load_bits(v, X[0])
        e = self.asm.emit
        for reg, off in self.saved:
            self.load_mem(reg, FP, off, 8)
        e("mov", SP, FP)
        e("ldp", FP, LR, Mem(SP, 16, "post"))
        e("ret")

    # -- host launch --------------------------------------------------------------------------
    def op_gpu_launch(self, ins) -> None:
        cells, array, hslot = self.frame.scratch[id(ins)]
        args = ins.operands[9:]
        for k, (v, cell) in enumerate(zip(args, cells)):
            if v.type.is_aggregate:
                self.copy(FP, cell, FP, self.off(v), v.type.size)
            else:
                self.load_bits(v, A)
                self.store_mem(A, FP, cell, v.type.size)
            self.add_offset(A, FP, cell)
            self.store_mem(A, FP, array + 8 * k, 8)
        handle = ins.operands[0]
        kernel = ins.attrs.get("kernel")
        if kernel:
            self.label_address(self.cstring(kernel.encode()), X[0])
            self.call_symbol(self.runtime_symbol(KERNEL_HANDLE))
            self.store_mem(X[0], FP, hslot, 8)
            handle = _Slot(hslot)
        params = _Slot(array, lea=True) if args else Const(I64, 0)
        values = [handle, *ins.operands[1:9], params, Const(I32, len(args))]
        lay = layout(LAUNCH_PARAMS, I32)
        for loc, v in zip(lay.args, values):
            reg = IP0 if loc.stack is not None else loc.pieces[0].reg
            if isinstance(v, _Slot):
                if v.lea:
                    self.add_offset(reg, FP, v.offset)
                else:
                    self.load_mem(reg, FP, v.offset, 8)
            else:
                self.load_bits(v, reg)
            if loc.stack is not None:
                self.store_mem(reg, SP, loc.stack, 8)
        self.call_symbol(self.runtime_symbol(LAUNCH))

