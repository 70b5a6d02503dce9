"""x86-64 instruction encodings as rows of data; `emit.py` is the only reader.

One `Enc` row is one encoding form of one mnemonic. Fields:
  mn    mnemonic as Intel/capstone spell it ("add", "cmovne", "cvttsd2si").
  form  where operands go: RM (reg, r/m)  MR (r/m, reg)  MI (r/m, imm)  M (r/m)
        MC (r/m, cl)  OI (reg in opcode, imm)  O (reg in opcode)  ZO (no operands)
        I (imm only)  D (rel32 target)  RMI (reg, r/m, imm).
  bits  integer operand size: 16 adds the 0x66 prefix, 64 sets REX.W (unless `w` overrides).
  op    opcode bytes after prefixes and REX (an int is one byte).
  reg   the /digit opcode extension in ModRM.reg (None: a register operand goes there).
  imm   immediate width in bits (0: none).
  pre   mandatory prefix (0x66/0xF2/0xF3) written before REX; SSE rows use it.
  w     REX.W; None means "bits == 64". Rows whose default size is 64 (push, call/jmp
        indirect) set w=False.
  ops   operand classes, derived from form and bits when omitted:
        rN (GPR of N bits)  rmN (GPR of N bits or memory)  mN (memory of N bits)  m (any
        memory, e.g. lea)  x (xmm)  xmN (xmm or N-bit memory)  iN (immediate, sign-extended
        to the operand size)  uN (unsigned immediate, e.g. shift counts)  rel32  cl.
Invariant: rows are tried in table order, so a shorter form comes before a longer one that
accepts the same operands (imm8 before imm32, imm32 before imm64).
"""
from __future__ import annotations

from dataclasses import dataclass

# Condition codes in encoding order (low nibble of jcc/setcc/cmovcc opcodes), capstone spelling.
CONDITIONS = ("o", "no", "b", "ae", "e", "ne", "be", "a",
              "s", "ns", "p", "np", "l", "ge", "le", "g")
# Other spellings the selector may use, mapped to the canonical ones above.
CONDITION_ALIASES = {
    "c": "b", "nae": "b", "nb": "ae", "nc": "ae", "z": "e", "nz": "ne", "na": "be",
    "nbe": "a", "pe": "p", "po": "np", "nge": "l", "nl": "ge", "ng": "le", "nle": "g",
}


@dataclass(frozen=True)
class Enc:
    mn: str
    form: str
    bits: int | None = None
    op: int | tuple[int, ...] = ()
    reg: int | None = None
    imm: int = 0
    pre: int | None = None
    w: bool | None = None
    ops: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.op, int):
            object.__setattr__(self, "op", (self.op,))
        if self.w is None:
            object.__setattr__(self, "w", self.bits == 64)
        if not self.ops:
            object.__setattr__(self, "ops", _default_ops(self.form, self.bits, self.imm))


def _default_ops(form: str, bits: int | None, imm: int) -> tuple[str, ...]:
    r, rm, i = f"r{bits}", f"rm{bits}", f"i{imm}"
    return {
        "RM": (r, rm), "MR": (rm, r), "MI": (rm, i), "M": (rm,), "MC": (rm, "cl"), "I": (i,),
        "OI": (r, i), "O": (r,), "ZO": (), "D": ("rel32",), "RMI": (r, rm, i),
    }[form]


INT_SIZES = (8, 16, 32, 64)
WIDE_SIZES = (16, 32, 64)
_IMM_FULL = {8: 8, 16: 16, 32: 32, 64: 32}  # the widest immediate for each operand size

# ALU group 1: (mnemonic, base opcode, /digit of the 0x80/0x81/0x83 forms).
_ALU = (("add", 0x00, 0), ("or", 0x08, 1), ("adc", 0x10, 2), ("sbb", 0x18, 3),
        ("and", 0x20, 4), ("sub", 0x28, 5), ("xor", 0x30, 6), ("cmp", 0x38, 7))


def _alu_rows() -> list[Enc]:
    rows = []
    for mn, base, digit in _ALU:
        for b in INT_SIZES:
            wide = b != 8
            rows += [Enc(mn, "MR", b, base + wide), Enc(mn, "RM", b, base + 2 + wide)]
            if wide:
                rows.append(Enc(mn, "MI", b, 0x83, reg=digit, imm=8))
            rows.append(Enc(mn, "MI", b, 0x81 if wide else 0x80, reg=digit, imm=_IMM_FULL[b]))
    return rows


# Unary group 3 (F6 for 8-bit, F7 otherwise): (mnemonic, /digit).
_UNARY = (("not", 2), ("neg", 3), ("mul", 4), ("imul", 5), ("div", 6), ("idiv", 7))
_SHIFTS = (("rol", 0), ("ror", 1), ("shl", 4), ("shr", 5), ("sar", 7))


def _unary_and_shift_rows() -> list[Enc]:
    rows = []
    for b in INT_SIZES:
        wide = b != 8
        rows += [Enc(mn, "M", b, 0xF7 if wide else 0xF6, reg=d) for mn, d in _UNARY]
        rows += [Enc("inc", "M", b, 0xFF if wide else 0xFE, reg=0),
                 Enc("dec", "M", b, 0xFF if wide else 0xFE, reg=1)]
        for mn, d in _SHIFTS:
            rows += [Enc(mn, "MC", b, 0xD3 if wide else 0xD2, reg=d),
                     Enc(mn, "MI", b, 0xC1 if wide else 0xC0, reg=d, imm=8,
                         ops=(f"rm{b}", "u8"))]
        rows += [Enc("test", "MR", b, 0x85 if wide else 0x84),
                 Enc("test", "MI", b, 0xF7 if wide else 0xF6, reg=0, imm=_IMM_FULL[b])]
    for b in WIDE_SIZES:
        rows += [Enc("imul", "RM", b, (0x0F, 0xAF)),
                 Enc("imul", "RMI", b, 0x6B, imm=8),
                 Enc("imul", "RMI", b, 0x69, imm=_IMM_FULL[b])]
    return rows


def _mov_rows() -> list[Enc]:
    rows = []
    for b in INT_SIZES:
        wide = b != 8
        rows += [Enc("mov", "MR", b, 0x89 if wide else 0x88),
                 Enc("mov", "RM", b, 0x8B if wide else 0x8A)]
        opreg = Enc("mov", "OI", b, 0xB8 if wide else 0xB0, imm=b)
        mi = Enc("mov", "MI", b, 0xC7 if wide else 0xC6, reg=0, imm=_IMM_FULL[b])
        # mov r64, simm32 (C7) is shorter than movabs; for smaller sizes B8+r is shortest.
        rows += [mi, opreg] if b == 64 else [opreg, mi]
    for b in WIDE_SIZES:
        rows += [Enc("lea", "RM", b, 0x8D, ops=(f"r{b}", "m")),
                 Enc("movzx", "RM", b, (0x0F, 0xB6), ops=(f"r{b}", "rm8")),
                 Enc("movsx", "RM", b, (0x0F, 0xBE), ops=(f"r{b}", "rm8"))]
    for b in (32, 64):
        rows += [Enc("movzx", "RM", b, (0x0F, 0xB7), ops=(f"r{b}", "rm16")),
                 Enc("movsx", "RM", b, (0x0F, 0xBF), ops=(f"r{b}", "rm16"))]
    rows.append(Enc("movsxd", "RM", 64, 0x63, ops=("r64", "rm32")))
    return rows


def _condition_rows() -> list[Enc]:
    rows = []
    for cc, cond in enumerate(CONDITIONS):
        rows.append(Enc(f"j{cond}", "D", op=(0x0F, 0x80 + cc)))
        rows.append(Enc(f"set{cond}", "M", 8, (0x0F, 0x90 + cc), reg=0))
        rows += [Enc(f"cmov{cond}", "RM", b, (0x0F, 0x40 + cc)) for b in WIDE_SIZES]
    return rows


def _control_rows() -> list[Enc]:
    return [
        Enc("jmp", "D", op=0xE9), Enc("call", "D", op=0xE8),
        Enc("jmp", "M", 64, 0xFF, reg=4, w=False), Enc("call", "M", 64, 0xFF, reg=2, w=False),
        Enc("push", "O", 64, 0x50, w=False), Enc("push", "M", 64, 0xFF, reg=6, w=False),
        Enc("push", "I", op=0x6A, imm=8, ops=("i8",)),
        Enc("push", "I", op=0x68, imm=32, ops=("i32",)),
        Enc("pop", "O", 64, 0x58, w=False), Enc("pop", "M", 64, 0x8F, reg=0, w=False),
        Enc("ret", "ZO", op=0xC3), Enc("leave", "ZO", op=0xC9), Enc("nop", "ZO", op=0x90),
        Enc("ud2", "ZO", op=(0x0F, 0x0B)), Enc("hlt", "ZO", op=0xF4),
        Enc("int3", "ZO", op=0xCC), Enc("syscall", "ZO", op=(0x0F, 0x05)),
        Enc("cdq", "ZO", 32, 0x99), Enc("cqo", "ZO", 64, 0x99),
        Enc("cdqe", "ZO", 64, 0x98),
    ]


# Scalar SSE arithmetic: (suffix-less name, opcode byte); ss uses F3, sd uses F2.
_SSE_ARITH = (("add", 0x58), ("mul", 0x59), ("sub", 0x5C), ("min", 0x5D), ("div", 0x5E),
              ("max", 0x5F), ("sqrt", 0x51))
# Packed logic ops: (ps name, pd name, opcode byte); pd/pxor use the 0x66 prefix.
_SSE_LOGIC = (("andps", "andpd", 0x54), ("andnps", "andnpd", 0x55), ("orps", "orpd", 0x56),
              ("xorps", "xorpd", 0x57))


def _sse_rows() -> list[Enc]:
    rows = []
    for kind, pre, width in (("ss", 0xF3, 32), ("sd", 0xF2, 64)):
        xm, m = f"xm{width}", f"m{width}"
        rows += [Enc(f"mov{kind}", "RM", op=(0x0F, 0x10), pre=pre, ops=("x", xm)),
                 Enc(f"mov{kind}", "MR", op=(0x0F, 0x11), pre=pre, ops=(m, "x"))]
        rows += [Enc(f"{mn}{kind}", "RM", op=(0x0F, o), pre=pre, ops=("x", xm))
                 for mn, o in _SSE_ARITH]
        for b, w in ((32, False), (64, True)):
            rows += [Enc(f"cvtsi2{kind}", "RM", op=(0x0F, 0x2A), pre=pre, w=w,
                         ops=("x", f"rm{b}")),
                     Enc(f"cvtt{kind}2si", "RM", op=(0x0F, 0x2C), pre=pre, w=w,
                         ops=(f"r{b}", xm)),
                     Enc(f"cvt{kind}2si", "RM", op=(0x0F, 0x2D), pre=pre, w=w,
                         ops=(f"r{b}", xm))]
        cmp_pre = None if kind == "ss" else 0x66
        rows += [Enc(f"ucomi{kind}", "RM", op=(0x0F, 0x2E), pre=cmp_pre, ops=("x", xm)),
                 Enc(f"comi{kind}", "RM", op=(0x0F, 0x2F), pre=cmp_pre, ops=("x", xm))]
    rows += [Enc("cvtss2sd", "RM", op=(0x0F, 0x5A), pre=0xF3, ops=("x", "xm32")),
             Enc("cvtsd2ss", "RM", op=(0x0F, 0x5A), pre=0xF2, ops=("x", "xm64"))]
    for ps, pd, o in _SSE_LOGIC:
        rows += [Enc(ps, "RM", op=(0x0F, o), ops=("x", "xm128")),
                 Enc(pd, "RM", op=(0x0F, o), pre=0x66, ops=("x", "xm128"))]
    rows += [
        Enc("pxor", "RM", op=(0x0F, 0xEF), pre=0x66, ops=("x", "xm128")),
        Enc("movaps", "RM", op=(0x0F, 0x28), ops=("x", "xm128")),
        Enc("movaps", "MR", op=(0x0F, 0x29), ops=("m128", "x")),
        Enc("movups", "RM", op=(0x0F, 0x10), ops=("x", "xm128")),
        Enc("movups", "MR", op=(0x0F, 0x11), ops=("m128", "x")),
        Enc("movd", "RM", op=(0x0F, 0x6E), pre=0x66, ops=("x", "rm32")),
        Enc("movd", "MR", op=(0x0F, 0x7E), pre=0x66, ops=("rm32", "x")),
        Enc("movq", "RM", op=(0x0F, 0x6E), pre=0x66, w=True, ops=("x", "rm64")),
        Enc("movq", "MR", op=(0x0F, 0x7E), pre=0x66, w=True, ops=("rm64", "x")),
    ]
    return rows


ROWS: tuple[Enc, ...] = tuple(
    _alu_rows() + _unary_and_shift_rows() + _mov_rows() + _condition_rows()
    + _control_rows() + _sse_rows()
)

BY_MNEMONIC: dict[str, tuple[Enc, ...]] = {}
for _row in ROWS:
    BY_MNEMONIC[_row.mn] = BY_MNEMONIC.get(_row.mn, ()) + (_row,)
