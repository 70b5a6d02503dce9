"""Encode one x86-64 instruction by walking an `encodings.Enc` row.

This module holds no opcode bytes: it picks the first row of `encodings.BY_MNEMONIC` whose
operand classes accept the operands, then writes
  [0x66 if 16-bit] [mandatory prefix] [REX] opcode [ModRM [SIB] [disp]] [imm].
A field that needs a symbol's address (rel32 branch target or RIP-relative displacement)
comes back as a `Ref` with the field offset and an addend already adjusted so that the field
value is `S + ref.addend - P` (P = address of the field), i.e. exactly an ELF PC-relative
relocation addend; immediates after the field are accounted for.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...diagnostics import error
from .encodings import BY_MNEMONIC, CONDITION_ALIASES, Enc
from .operands import Imm, Mem, Operand, Sym
from .regs import GPR, XMM, Reg

BRANCH, PC, GOT = "branch", "pc", "got"


@dataclass(frozen=True)
class Ref:
    offset: int  # offset of the 32-bit field inside the instruction bytes
    sym: str
    addend: int
    kind: str  # BRANCH (rel32 call/jmp/jcc), PC (rip-relative data), GOT (rip-relative GOT slot)


@dataclass(frozen=True)
class Encoded:
    data: bytes
    ref: Ref | None
    row: Enc


def canonical_mnemonic(mn: str) -> str:
    """Map condition-code aliases (jz, setnae, cmovnle...) to the table's spelling."""
    for head in ("cmov", "set", "j"):
        if mn.startswith(head) and mn[len(head):] in CONDITION_ALIASES:
            return head + CONDITION_ALIASES[mn[len(head):]]
    return mn


def imm_fits(value: int, imm_bits: int, op_bits: int | None) -> bool:
    """An immediate as wide as the operand may be written signed or unsigned; a narrower
    one is sign-extended by the CPU, so it must fit signed."""
    lo = -(1 << (imm_bits - 1))
    hi = (1 << imm_bits) - 1 if op_bits is not None and imm_bits >= op_bits else -lo - 1
    return lo <= value <= hi


def _mem_size_ok(m: Mem, size: str) -> bool:
    return m.size is None or size == "" or m.size == int(size)


def accepts(cls: str, operand: Operand, row: Enc) -> bool:
    """Whether operand class `cls` of `row` (see encodings.py) accepts `operand`."""
    if isinstance(operand, Reg):
        if cls == "cl":
            return operand.kind == GPR and operand.size == 8 and operand.num == 1
        if cls == "x" or cls.startswith("xm"):
            return operand.kind == XMM
        if cls.startswith(("rm", "r")) and not cls.startswith("rel"):
            return operand.kind == GPR and operand.size == int(cls.lstrip("rm"))
        return False
    if isinstance(operand, Mem):
        if cls.startswith("xm"):
            return _mem_size_ok(operand, cls[2:])
        if cls.startswith(("rm", "m")):
            return _mem_size_ok(operand, cls.lstrip("rm"))
        return False
    if isinstance(operand, Imm):
        if cls.startswith("u"):
            return 0 <= operand.value < (1 << int(cls[1:]))
        return cls.startswith("i") and imm_fits(operand.value, int(cls[1:]), row.bits)
    return isinstance(operand, Sym) and cls == "rel32"


def select(mn: str, operands: tuple[Operand, ...]) -> Enc:
    """The first row of `mn` that accepts all operands (rows are ordered shortest first)."""
    rows = BY_MNEMONIC.get(canonical_mnemonic(mn))
    if not rows:
        raise error("E0900", f"internal compiler error: unknown x86-64 mnemonic '{mn}'")
    shown = ", ".join(map(repr, operands))
    found = [row for row in rows if len(row.ops) == len(operands) and all(
        accepts(c, o, row) for c, o in zip(row.ops, operands))]
    if not found:
        raise error("E0900", f"internal compiler error: no x86-64 encoding for {mn} {shown}")
    # A memory operand without a size is only fine when every candidate agrees on it
    # (`add [rax], rcx` yes; `add [rax], 1` needs Mem.size).
    for k, o in enumerate(operands):
        if isinstance(o, Mem) and o.size is None and len({r.ops[k] for r in found}) > 1:
            raise error("E0900", f"internal compiler error: operand size of {mn} {shown} "
                        "is ambiguous; give the memory operand a size")
    return found[0]


def encode(mn: str, *operands: Operand) -> Encoded:
    """Encode `mn operands` (Intel operand order: destination first)."""
    row = select(mn, operands)
    return encode_row(row, operands)


def _split(row: Enc, ops: tuple[Operand, ...]):
    """(reg-field operand, r/m operand, opcode-register operand, immediate, branch target)."""
    f = row.form
    reg = ops[0] if f in ("RM", "RMI") else ops[1] if f == "MR" else None
    rm = ops[1] if f in ("RM", "RMI") else ops[0] if f in ("MR", "MI", "M", "MC") else None
    opreg = ops[0] if f in ("O", "OI") else None
    imm = ops[-1] if row.imm else None
    target = ops[0] if f == "D" else None
    return reg, rm, opreg, imm, target


def _rex(row: Enc, reg, rm, opreg, ops) -> bytes:
    r = reg.ext if isinstance(reg, Reg) else 0
    x = rm.index.ext if isinstance(rm, Mem) and rm.index is not None else 0
    b = 0
    if isinstance(rm, Reg):
        b = rm.ext
    elif isinstance(rm, Mem) and rm.base is not None:
        b = rm.base.ext
    elif opreg is not None:
        b = opreg.ext
    bits = (row.w << 3) | (r << 2) | (x << 1) | b
    forced = any(isinstance(o, Reg) and o.needs_rex for o in ops)
    return bytes([0x40 | bits]) if bits or forced else b""


def _modrm(regfield: int, rm: Operand) -> tuple[bytes, int | None]:
    """ModRM [SIB] [disp]; the second value is the offset of a RIP disp32 to patch."""
    if isinstance(rm, Reg):
        return bytes([0xC0 | regfield << 3 | rm.low3]), None
    assert isinstance(rm, Mem)
    if rm.rip:
        return bytes([0x05 | regfield << 3]) + bytes(4), 1
    scale = {1: 0, 2: 1, 4: 2, 8: 3}[rm.scale] << 6
    index = (rm.index.low3 if rm.index is not None else 4) << 3
    disp = rm.disp
    if rm.base is None:  # [index*scale + disp32]: SIB with base=101 and mod=00
        return bytes([0x04 | regfield << 3, scale | index | 5]) + _le(disp, 4), None
    if disp == 0 and rm.base.low3 != 5:  # rbp/r13 have no mod=00 form: they take disp8 0
        mod, tail = 0, b""
    elif -128 <= disp <= 127:
        mod, tail = 1, _le(disp, 1)
    else:
        mod, tail = 2, _le(disp, 4)
    if rm.index is None and rm.base.low3 != 4:  # rsp/r12 as base always need a SIB byte
        return bytes([mod << 6 | regfield << 3 | rm.base.low3]) + tail, None
    return bytes([mod << 6 | regfield << 3 | 4, scale | index | rm.base.low3]) + tail, None


def _le(value: int, size: int) -> bytes:
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def encode_row(row: Enc, ops: tuple[Operand, ...]) -> Encoded:
    reg, rm, opreg, imm, target = _split(row, ops)
    out = bytearray(b"\x66" if row.bits == 16 else b"")
    if row.pre is not None:
        out.append(row.pre)
    out += _rex(row, reg, rm, opreg, ops)
    opcode = list(row.op)
    if opreg is not None:
        opcode[-1] += opreg.low3
    out += bytes(opcode)
    ref_at, ref = None, None
    if rm is not None:
        regfield = row.reg if row.reg is not None else reg.low3
        body, rip_at = _modrm(regfield, rm)
        if rip_at is not None:
            ref_at = len(out) + rip_at
            ref = (rm.sym, rm.disp, GOT if rm.got else PC)
        out += body
    if target is not None:
        ref_at, ref = len(out), (target.name, target.addend, BRANCH)
        out += bytes(4)
    if imm is not None:
        out += _le(imm.value, row.imm // 8)
    if ref is None:
        return Encoded(bytes(out), None, row)
    sym, addend, kind = ref
    return Encoded(bytes(out), Ref(ref_at, sym, addend - (len(out) - ref_at), kind), row)
