"""Moving IR values between frame slots and registers on AArch64 (the selector's only state).

Same design as the x86-64 selector (frame.py states the canonical slot form): every value
lives in a slot at a negative offset from x29; instructions load operands into scratch
registers, compute, and store. Scratch registers: x9..x13 for values, d16/d17 (s16/s17) for
floats, x16 (IP0) for copies and float bits, x17 (IP1) for addresses and offsets that do not
fit an instruction. x19..x28 are never touched, so nothing callee-saved needs saving.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Const, Function, Global, Instr, Local, Param, Undef
from ...ir.types import FloatType, IntType, Type
from ..common.frame import is_alloca
from ..common.host import const_bits
from .operands import Imm, Lo12, Mem, Page
from .regs import FP, FPR, IP0, IP1, SP, XZR, Reg, w, x

# (load?, size, signed, fp) -> (scaled mnemonic, unscaled mnemonic, register view bits)
_INT_LOADS = {(1, False): ("ldrb", "ldurb", 32), (1, True): ("ldrsb", "ldursb", 64),
              (2, False): ("ldrh", "ldurh", 32), (2, True): ("ldrsh", "ldursh", 64),
              (4, False): ("ldr", "ldur", 32), (4, True): ("ldrsw", "ldursw", 64),
              (8, False): ("ldr", "ldur", 64), (8, True): ("ldr", "ldur", 64)}
_INT_STORES = {1: ("strb", "sturb", 32), 2: ("strh", "sturh", 32), 4: ("str", "stur", 32),
               8: ("str", "stur", 64)}


def ice(msg: str):
    return error("E0900", f"internal compiler error (aarch64): {msg}")


class ValueMixin:
    regs: dict = {}      # id(value) -> x19..x28 under -O (common/regalloc.py); else slots
    # (value, register, code offset, label count) right after `put`: reloading that value
    # into that register at the same offset, with no label in between, is redundant
    _just_stored: tuple | None = None

    # -- immediates and addresses ---------------------------------------------------------
    def mov_imm(self, reg: Reg, value: int) -> None:
        """Materialise a 64-bit constant (movz/movn + movk)."""
        value &= (1 << 64) - 1
        halves = [(value >> (16 * k)) & 0xFFFF for k in range(4)]
        if value == 0:
            self.asm.emit("mov", reg, XZR)
            return
        inverted = halves.count(0xFFFF) > halves.count(0)
        skip = 0xFFFF if inverted else 0
        first = True
        for k, h in enumerate(halves):
            if h == skip:
                continue
            if first:
                self.asm.emit("movn" if inverted else "movz", reg,
                              Imm((~h & 0xFFFF) if inverted else h), Imm(16 * k))
                first = False
            else:
                self.asm.emit("movk", reg, Imm(h), Imm(16 * k))
        if first:  # all halves 0xFFFF
            self.asm.emit("movn", reg, Imm(0), Imm(0))

    def add_offset(self, reg: Reg, base: Reg, off: int) -> None:
        """reg = base + off (base may be sp or x29)."""
        e = self.asm.emit
        if off == 0:
            if reg != base:
                e("mov", reg, base)
        elif 0 < off < 1 << 12 or (0 < off < 1 << 24 and off % 4096 == 0):
            e("add", reg, base, Imm(off))
        elif -(1 << 12) < off < 0:
            e("sub", reg, base, Imm(-off))
        else:
            self.mov_imm(IP1, off)
            e("add", reg, base, IP1)

    def mem(self, base: Reg, off: int, size: int, scaled: str, unscaled: str) -> tuple:
        """(mnemonic, Mem) addressing [base + off] for an access of `size` bytes."""
        if off >= 0 and off % size == 0 and off // size < 4096:
            return scaled, Mem(base, off)
        if -256 <= off < 256:
            return unscaled, Mem(base, off)
        if base == FP:  # the same bytes relative to sp may fit the scaled form
            sp_off = off + self.frame.size
            if sp_off >= 0 and sp_off % size == 0 and sp_off // size < 4096:
                return scaled, Mem(SP, sp_off)
        self.mov_imm(IP1, off)
        return scaled, Mem(base, index=IP1)

    def load_mem(self, reg: Reg, base: Reg, off: int, size: int, signed: bool = False) -> None:
        """Load `size` bytes into `reg` (int: extended to 64 bits by `signed`; FP: s/d)."""
        if reg.kind == FPR:
            mn, m = self.mem(base, off, size, "ldr", "ldur")
            self.asm.emit(mn, reg, m)
            return
        scaled, unscaled, bits = _INT_LOADS[(size, signed)]
        mn, m = self.mem(base, off, size, scaled, unscaled)
        self.asm.emit(mn, x(reg) if bits == 64 else w(reg), m)

    def store_mem(self, reg: Reg, base: Reg, off: int, size: int) -> None:
        if reg.kind == FPR:
            mn, m = self.mem(base, off, size, "str", "stur")
            self.asm.emit(mn, reg, m)
            return
        scaled, unscaled, bits = _INT_STORES[size]
        mn, m = self.mem(base, off, size, scaled, unscaled)
        self.asm.emit(mn, x(reg) if bits == 64 else w(reg), m)

    def symbol_address(self, v, reg: Reg) -> None:
        imported = (isinstance(v, Global) and v.linkage == "import") or \
            (isinstance(v, Function) and v.is_extern)
        self.asm.emit("adrp", reg, Page(v.symbol, got=imported))
        if imported:
            self.asm.emit("ldr", reg, Mem(reg, lo12=Lo12(v.symbol, got=True)))
        else:
            self.asm.emit("add", reg, reg, Lo12(v.symbol))

    def label_address(self, label: str, reg: Reg) -> None:
        self.asm.emit("adrp", reg, Page(label))
        self.asm.emit("add", reg, reg, Lo12(label))

    # -- slots ------------------------------------------------------------------------------
    def off(self, v) -> int:
        return self.frame.offset(v)

    def load_bits(self, v, reg: Reg) -> None:
        """Load scalar `v` into 64-bit `reg` in its canonical form."""
        if isinstance(v, Const):
            self.mov_imm(reg, const_bits(v))
        elif isinstance(v, Undef):
            self.asm.emit("mov", reg, XZR)
        elif isinstance(v, (Global, Function)):
            self.symbol_address(v, reg)
        elif is_alloca(v):
            self.add_offset(reg, FP, self.off(v))
        elif self._just_stored == (id(v), reg, self.asm.offset, len(self.asm.labels)):
            return   # the previous instruction stored this very register
        elif id(v) in self.regs:
            self.asm.emit("mov", reg, self.regs[id(v)])
        elif isinstance(v, (Param, Instr, Local)):
            self.load_mem(reg, FP, self.off(v), 8)
        else:
            raise ice(f"cannot load operand {v!r}")

    def load_fp(self, v, f: Reg) -> None:
        """Load float `v` into FP register view `f` (s or d)."""
        if isinstance(v, (Const, Undef)) or id(v) in self.regs:
            src = self.regs.get(id(v))
            if src is None:
                self.load_bits(v, IP0)
                src = IP0
            self.asm.emit("fmov", f, src if f.size == 64 else w(src))
        else:
            self.load_mem(f, FP, self.off(v), f.size // 8)

    def normalize(self, t: Type, reg: Reg) -> None:
        """Re-extend the low `t.size` bytes of `reg` to the canonical slot form."""
        e = self.asm.emit
        if t.is_bool or (isinstance(t, IntType) and not t.signed and t.bits == 8):
            e("uxtb", w(reg), w(reg))
        elif isinstance(t, IntType) and t.bits < 64:
            if t.bits == 32:
                e("sxtw", x(reg), w(reg)) if t.signed else e("mov", w(reg), w(reg))
            elif t.signed:
                e("sxtb" if t.bits == 8 else "sxth", x(reg), w(reg))
            else:
                e("uxth", w(reg), w(reg))
        elif isinstance(t, FloatType) and t.bits == 32:
            e("mov", w(reg), w(reg))

    def gp(self, v, scratch: Reg) -> Reg:
        """The register holding scalar `v`'s canonical bits: its own under -O, else
        `scratch` after loading it there."""
        reg = self.regs.get(id(v))
        if reg is not None and isinstance(v, (Param, Instr, Local)) and not is_alloca(v):
            return reg
        self.load_bits(v, scratch)
        return scratch

    def home(self, v, scratch: Reg) -> Reg:
        """Where to compute `v`'s result: its register under -O, else `scratch`."""
        return self.regs.get(id(v)) or scratch

    def put(self, v, reg: Reg) -> None:
        """Write 64-bit `reg` (already canonical) to scalar `v`'s register or slot."""
        if id(v) in self.regs:
            if self.regs[id(v)] != reg:
                self.asm.emit("mov", self.regs[id(v)], reg)
        else:
            self.store_mem(reg, FP, self.off(v), 8)
        self._just_stored = (id(v), reg, self.asm.offset, len(self.asm.labels))

    def store_bits(self, ins, reg: Reg, raw: bool = False) -> None:
        if not raw:
            self.normalize(ins.type, reg)
        self.put(ins, reg)

    def store_fp(self, ins, f: Reg) -> None:
        """Store FP register `f` to the slot of `ins` (float32: upper half zero)."""
        dst = self.regs.get(id(ins))
        if dst is not None:
            self.asm.emit("fmov", w(dst) if f.size == 32 else dst, f)
        elif f.size == 32:
            self.asm.emit("fmov", w(IP0), f)
            self.store_mem(IP0, FP, self.off(ins), 8)
        else:
            self.store_mem(f, FP, self.off(ins), 8)

    # -- aggregate bytes ----------------------------------------------------------------------
    def copy(self, dst: Reg, dst_off: int, src: Reg, src_off: int, size: int) -> None:
        """Copy bytes [src+src_off] -> [dst+dst_off] through x16, or libc memcpy when big
        (which clobbers the caller-saved registers)."""
        if size > 256:
            self.add_offset(IP0, src, src_off)
            self.add_offset(x(self.arg0), dst, dst_off)
            self.asm.emit("mov", self.arg1, IP0)
            self.mov_imm(self.arg2, size)
            self.call_symbol("memcpy")
            return
        off = 0
        for width in (8, 4, 2, 1):
            while size - off >= width:
                self.load_mem(IP0, src, src_off + off, width)
                self.store_mem(IP0, dst, dst_off + off, width)
                off += width

    def zero(self, base: Reg, off: int, size: int) -> None:
        if size > 256:
            self.add_offset(self.arg0, base, off)
            self.asm.emit("mov", self.arg1, XZR)
            self.mov_imm(self.arg2, size)
            self.call_symbol("memset")
            return
        pos = 0
        for width in (8, 4, 2, 1):
            while size - pos >= width:
                self.store_mem(XZR, base, off + pos, width)
                pos += width
