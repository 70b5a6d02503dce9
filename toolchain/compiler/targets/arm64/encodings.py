"""AArch64 instruction encodings as rows; `encode` picks the first row whose operand classes
accept the operands and returns the 32-bit word (plus a fixup for symbol operands).

Mnemonics are the ones capstone prints, aliases included (`mov`, `cmp`, `cset`, `mul`, `lsl`,
`sxtb`...), except `movz`/`movn`, which capstone prints as `mov #value` (tests/arm64 maps
them). Operand classes:
  r   general register or zero register (x or w; the row's size comes from the first one)
  rs  general register or sp             xw  64-bit destination with 32-bit source (sxtb x, w)
  f   FP register s or d (all of one row the same size unless the row says otherwise)
  x   general 64-bit register  (fcvtzs/scvtf/fmov mix integer and FP operands)
  aimm  add/sub immediate: 0..4095, or a multiple of 4096 below 2^24 (encoded with lsl #12)
  u16 0..65535   sh  0/16/32/48   cond  a condition name   u6 shift amount
  mem  [base, #off] scaled unsigned   memu [base, #-256..255]   memr [base, index]
  pre / post  pre-/post-indexed pair address   pair  [base, #off] pair address
  b26 / b19  branch target (Sym)   page  adrp target (Page)   lo12  :lo12: operand
A fixup is (kind, symbol, addend); kinds are named after the ELF relocations they become.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...diagnostics import error
from .operands import Imm, Lo12, Mem, Page, Sym
from .regs import FPR, GPR, SP_KIND, ZR, Reg

CONDS = ("eq", "ne", "hs", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le",
         "al", "nv")
COND_ALIASES = {"cs": "hs", "cc": "lo"}


def cond_code(c: str) -> int:
    return CONDS.index(COND_ALIASES.get(c, c))


def invert(c: str) -> str:
    return CONDS[cond_code(c) ^ 1]


@dataclass(frozen=True)
class Fixup:
    kind: str   # "jump26" "call26" "condbr19" "page21" "gotpage21" "add_lo12" "ldst{N}_lo12"
    sym: str    #  "got_lo12"
    addend: int


@dataclass(frozen=True)
class Row:
    mn: str
    ops: tuple[str, ...]
    enc: Callable[..., int]
    fix: str | None = None   # fixup kind for the symbol operand, if any
    size: int = 0            # memory access size in bytes (load/store rows)


def _n(r: Reg) -> int:
    return r.num


def _sf(r: Reg) -> int:
    return 1 if r.size == 64 else 0


def _ftype(r: Reg) -> int:
    return 1 if r.size == 64 else 0


def _aimm(v: int) -> int:
    """imm12 | sh<<12 of an add/sub immediate."""
    return v if v < 4096 else (v >> 12) | 1 << 12


def _rrr(base: int):
    return lambda d, n, m: base | _sf(d) << 31 | _n(m) << 16 | _n(n) << 5 | _n(d)


def _rri(base: int):
    def enc(d, n, i):
        a = _aimm(i.value)
        return base | _sf(d) << 31 | (a >> 12) << 22 | (a & 0xFFF) << 10 | _n(n) << 5 | _n(d)
    return enc


def _f3(base: int):
    return lambda d, n, m: base | _ftype(d) << 22 | _n(m) << 16 | _n(n) << 5 | _n(d)


def _f2(base: int):
    return lambda d, n: base | _ftype(d) << 22 | _n(n) << 5 | _n(d)


def _ldst_scaled(base: int, size: int):
    return lambda t, m: base | (m.offset // size) << 10 | _n(m.base) << 5 | _n(t)


def _ldst_unscaled(base: int):
    return lambda t, m: base | (m.offset & 0x1FF) << 12 | _n(m.base) << 5 | _n(t)


def _ldst_reg(base: int):
    # option 011 (LSL/UXTX), S=0: [base, index]
    return lambda t, m: base | 1 << 21 | _n(m.index) << 16 | 3 << 13 | 2 << 10 | \
        _n(m.base) << 5 | _n(t)


def _ldst_lo12(base: int):
    return lambda t, m: base | _n(m.base) << 5 | _n(t)


def _pair(base: int):
    return lambda t1, t2, m: base | ((m.offset // 8) & 0x7F) << 15 | _n(t2) << 10 | \
        _n(m.base) << 5 | _n(t1)


def _int_ldst_rows() -> list[Row]:
    """(mnemonic, register class, size, scaled-imm opcode, unscaled opcode, unscaled name)."""
    table = [
        ("ldrb", "w", 1, 0x39400000, 0x38400000, "ldurb"),
        ("strb", "w", 1, 0x39000000, 0x38000000, "sturb"),
        ("ldrh", "w", 2, 0x79400000, 0x78400000, "ldurh"),
        ("strh", "w", 2, 0x79000000, 0x78000000, "sturh"),
        ("ldr", "w", 4, 0xB9400000, 0xB8400000, "ldur"),
        ("str", "w", 4, 0xB9000000, 0xB8000000, "stur"),
        ("ldr", "x", 8, 0xF9400000, 0xF8400000, "ldur"),
        ("str", "x", 8, 0xF9000000, 0xF8000000, "stur"),
        ("ldrsb", "x", 1, 0x39800000, 0x38800000, "ldursb"),
        ("ldrsh", "x", 2, 0x79800000, 0x78800000, "ldursh"),
        ("ldrsw", "x", 4, 0xB9800000, 0xB8800000, "ldursw"),
        ("ldr", "s", 4, 0xBD400000, 0xBC400000, "ldur"),
        ("str", "s", 4, 0xBD000000, 0xBC000000, "stur"),
        ("ldr", "d", 8, 0xFD400000, 0xFC400000, "ldur"),
        ("str", "d", 8, 0xFD000000, 0xFC000000, "stur"),
    ]
    rows = []
    for mn, cls, size, scaled, unscaled, umn in table:
        rt = "r" + cls if cls in "wx" else "f" + cls
        rows += [Row(mn, (rt, "mem"), _ldst_scaled(scaled, size), size=size),
                 Row(umn, (rt, "memu"), _ldst_unscaled(unscaled), size=size),
                 Row(mn, (rt, "memr"), _ldst_reg(unscaled), size=size),
                 Row(mn, (rt, "memlo"), _ldst_lo12(scaled), fix=f"ldst{size * 8}_lo12",
                     size=size)]
    return rows


def _cset(d, c):
    return 0x1A9F07E0 | _sf(d) << 31 | cond_code(invert(c)) << 12 | _n(d)


def _mov_wide(base: int):
    return lambda d, i, s: base | _sf(d) << 31 | (s.value // 16) << 21 | i.value << 5 | _n(d)


def _cvt(base: int):
    """scvtf/ucvtf (FP dest, int src) and fcvtzs/fcvtzu/fmov (either way): sf from the
    integer operand, type from the FP one."""
    def enc(d, n):
        i, f = (n, d) if d.kind == FPR else (d, n)
        return base | _sf(i) << 31 | _ftype(f) << 22 | _n(n) << 5 | _n(d)
    return enc


ROWS: tuple[Row, ...] = tuple([
    # integer arithmetic and logic (shifted register, no shift)
    Row("add", ("r", "r", "r"), _rrr(0x0B000000)),
    Row("adds", ("r", "r", "r"), _rrr(0x2B000000)),
    Row("sub", ("r", "r", "r"), _rrr(0x4B000000)),
    Row("subs", ("r", "r", "r"), _rrr(0x6B000000)),
    Row("and", ("r", "r", "r"), _rrr(0x0A000000)),
    Row("orr", ("r", "r", "r"), _rrr(0x2A000000)),
    Row("eor", ("r", "r", "r"), _rrr(0x4A000000)),
    Row("ands", ("r", "r", "r"), _rrr(0x6A000000)),
    Row("add", ("rs", "rs", "aimm"), _rri(0x11000000)),
    Row("sub", ("rs", "rs", "aimm"), _rri(0x51000000)),
    Row("add", ("rs", "rs", "r"),  # extended register (uxtx): sp as destination/base
        lambda d, n, m: 0x0B206000 | _sf(d) << 31 | _n(m) << 16 | _n(n) << 5 | _n(d)),
    Row("sub", ("rs", "rs", "r"),
        lambda d, n, m: 0x4B206000 | _sf(d) << 31 | _n(m) << 16 | _n(n) << 5 | _n(d)),
    Row("cmp", ("r", "r"), lambda n, m: _rrr(0x6B000000)(n, n, m) | 31),
    Row("cmp", ("rs", "aimm"), lambda n, i: _rri(0x71000000)(n, n, i) | 31),
    Row("tst", ("r", "r"), lambda n, m: _rrr(0x6A000000)(n, n, m) | 31),
    Row("mov", ("r", "r"), lambda d, m: _rrr(0x2A000000)(d, d, m) & ~(31 << 5) | 31 << 5),
    Row("mov", ("rs", "rs"), lambda d, n: _rri(0x11000000)(d, n, Imm(0))),
    Row("neg", ("r", "r"), lambda d, m: _rrr(0x4B000000)(d, d, m) & ~(31 << 5) | 31 << 5),
    Row("mvn", ("r", "r"), lambda d, m: _rrr(0x2A200000)(d, d, m) & ~(31 << 5) | 31 << 5),
    Row("mul", ("r", "r", "r"), lambda d, n, m: _rrr(0x1B007C00)(d, n, m)),
    Row("msub", ("r", "r", "r", "r"),
        lambda d, n, m, a: _rrr(0x1B008000)(d, n, m) | _n(a) << 10),
    Row("sdiv", ("r", "r", "r"), _rrr(0x1AC00C00)),
    Row("udiv", ("r", "r", "r"), _rrr(0x1AC00800)),
    Row("lsl", ("r", "r", "r"), _rrr(0x1AC02000)),
    Row("lsr", ("r", "r", "r"), _rrr(0x1AC02400)),
    Row("asr", ("r", "r", "r"), _rrr(0x1AC02800)),
    Row("lsr", ("r", "r", "u6"), lambda d, n, i: 0xD340FC00 | i.value << 16 | _n(n) << 5 |
        _n(d) if d.size == 64 else 0x53007C00 | i.value << 16 | _n(n) << 5 | _n(d)),
    Row("csel", ("r", "r", "r", "cond"),
        lambda d, n, m, c: _rrr(0x1A800000)(d, n, m) | cond_code(c) << 12),
    Row("cset", ("r", "cond"), _cset),
    # extensions (sbfm/ubfm aliases)
    Row("sxtb", ("xw", "w"), lambda d, n: 0x93401C00 | _n(n) << 5 | _n(d)),
    Row("sxth", ("xw", "w"), lambda d, n: 0x93403C00 | _n(n) << 5 | _n(d)),
    Row("sxtw", ("xw", "w"), lambda d, n: 0x93407C00 | _n(n) << 5 | _n(d)),
    Row("uxtb", ("w", "w"), lambda d, n: 0x53001C00 | _n(n) << 5 | _n(d)),
    Row("uxth", ("w", "w"), lambda d, n: 0x53003C00 | _n(n) << 5 | _n(d)),
    # wide immediates
    Row("movz", ("r", "u16", "sh"), _mov_wide(0x52800000)),
    Row("movn", ("r", "u16", "sh"), _mov_wide(0x12800000)),
    Row("movk", ("r", "u16", "sh"), _mov_wide(0x72800000)),
    # pairs (prologue/epilogue)
    Row("stp", ("rx", "rx", "pre"), _pair(0xA9800000)),
    Row("ldp", ("rx", "rx", "post"), _pair(0xA8C00000)),
    Row("stp", ("rx", "rx", "pair"), _pair(0xA9000000)),
    Row("ldp", ("rx", "rx", "pair"), _pair(0xA9400000)),
    # control flow
    Row("b", ("b26",), lambda t: 0x14000000, fix="jump26"),
    Row("bl", ("b26",), lambda t: 0x94000000, fix="call26"),
    Row("b.cond", ("cond", "b19"), lambda c, t: 0x54000000 | cond_code(c), fix="condbr19"),
    Row("cbz", ("r", "b19"), lambda r, t: 0x34000000 | _sf(r) << 31 | _n(r), fix="condbr19"),
    Row("cbnz", ("r", "b19"), lambda r, t: 0x35000000 | _sf(r) << 31 | _n(r),
        fix="condbr19"),
    Row("br", ("rx",), lambda n: 0xD61F0000 | _n(n) << 5),
    Row("blr", ("rx",), lambda n: 0xD63F0000 | _n(n) << 5),
    Row("ret", (), lambda: 0xD65F03C0),
    Row("udf", ("u16",), lambda i: i.value),
    Row("brk", ("u16",), lambda i: 0xD4200000 | i.value << 5),
    Row("nop", (), lambda: 0xD503201F),
    # addresses
    Row("adrp", ("rx", "page"), lambda d, p: 0x90000000 | _n(d), fix="page21"),
    Row("add", ("rx", "rx", "lo12"), lambda d, n, lo: 0x91000000 | _n(n) << 5 | _n(d),
        fix="add_lo12"),
    # floating point
    Row("fadd", ("f", "f", "f"), _f3(0x1E202800)),
    Row("fsub", ("f", "f", "f"), _f3(0x1E203800)),
    Row("fmul", ("f", "f", "f"), _f3(0x1E200800)),
    Row("fdiv", ("f", "f", "f"), _f3(0x1E201800)),
    Row("fneg", ("f", "f"), _f2(0x1E214000)),
    Row("fmov", ("f", "f"), _f2(0x1E204000)),
    Row("fcmp", ("f", "f"), lambda n, m: _f3(0x1E202000)(n, n, m) & ~31),
    Row("fcsel", ("f", "f", "f", "cond"),
        lambda d, n, m, c: _f3(0x1E200C00)(d, n, m) | cond_code(c) << 12),
    Row("fcvt", ("fd", "fs"), lambda d, n: 0x1E22C000 | _n(n) << 5 | _n(d)),
    Row("fcvt", ("fs", "fd"), lambda d, n: 0x1E624000 | _n(n) << 5 | _n(d)),
    Row("scvtf", ("f", "r"), _cvt(0x1E220000)),
    Row("ucvtf", ("f", "r"), _cvt(0x1E230000)),
    Row("fcvtzs", ("r", "f"), _cvt(0x1E380000)),
    Row("fcvtzu", ("r", "f"), _cvt(0x1E390000)),
    Row("fmov", ("r", "f"), _cvt(0x1E260000)),   # same-size only (checked in _accepts)
    Row("fmov", ("f", "r"), _cvt(0x1E270000)),
] + _int_ldst_rows())

BY_MNEMONIC: dict[str, tuple[Row, ...]] = {}
for _row in ROWS:
    BY_MNEMONIC[_row.mn] = BY_MNEMONIC.get(_row.mn, ()) + (_row,)


def _fits_scaled(m: Mem, size: int) -> bool:
    return m.index is None and m.lo12 is None and m.mode == "off" and m.offset >= 0 and \
        m.offset % size == 0 and m.offset // size < 4096


def accepts(cls: str, o, row: Row, first) -> bool:
    if isinstance(o, Reg):
        same = first is None or not isinstance(first, Reg) or first.kind == FPR or \
            o.kind == FPR or o.size == first.size
        if cls == "r":
            return o.kind in (GPR, ZR) and same
        if cls == "rs":
            return o.kind in (GPR, SP_KIND) and same
        if cls in ("rx", "rw"):  # zr too: `str xzr, [...]` stores zero
            return o.kind in (GPR, ZR) and o.size == (64 if cls == "rx" else 32)
        if cls == "xw":
            return o.kind == GPR and o.size == 64
        if cls == "w":
            return o.kind in (GPR, ZR) and o.size == 32
        if cls == "f":
            fsame = first is None or not isinstance(first, Reg) or first.kind != FPR or \
                o.size == first.size
            return o.kind == FPR and (fsame or row.mn in ("scvtf", "ucvtf", "fcvtzs",
                                                          "fcvtzu"))
        if cls in ("fs", "fd"):
            return o.kind == FPR and o.size == (32 if cls == "fs" else 64)
        return False
    if isinstance(o, Imm):
        v = o.value
        if cls == "aimm":
            return 0 <= v < 4096 or (v % 4096 == 0 and 0 <= v < 1 << 24)
        if cls == "u16":
            return 0 <= v < 1 << 16
        if cls == "sh":
            return v in (0, 16, 32, 48) and (v < 32 or first.size == 64)
        if cls == "u6":
            return 0 <= v < first.size
        return False
    if isinstance(o, Mem):
        if o.base.kind not in (GPR, SP_KIND) or o.base.size != 64:
            return False
        if cls == "mem":
            return _fits_scaled(o, row.size)
        if cls == "memu":
            return o.index is None and o.lo12 is None and o.mode == "off" and \
                -256 <= o.offset < 256
        if cls == "memr":
            return o.index is not None and o.index.kind == GPR and o.index.size == 64 \
                and o.offset == 0
        if cls == "memlo":
            return o.lo12 is not None and o.offset == 0 and o.index is None
        if cls in ("pre", "post", "pair"):
            mode = "off" if cls == "pair" else cls
            return o.mode == mode and o.index is None and o.offset % 8 == 0 and \
                -512 <= o.offset < 512
        return False
    if isinstance(o, str):
        return cls == "cond" and (o in CONDS or o in COND_ALIASES)
    if isinstance(o, Sym):
        return cls in ("b26", "b19")
    if isinstance(o, Page):
        return cls == "page"
    if isinstance(o, Lo12):
        return cls == "lo12" and not o.got
    return False


def _fmov_ok(row: Row, ops) -> bool:
    if row.mn != "fmov" or len(ops) != 2 or ops[0].kind == ops[1].kind:
        return True
    return ops[0].size == ops[1].size


def select(mn: str, ops: tuple) -> Row:
    rows = BY_MNEMONIC.get(mn)
    if not rows:
        raise error("E0900", f"internal compiler error: unknown AArch64 mnemonic '{mn}'")
    for row in rows:
        if len(row.ops) == len(ops) and all(accepts(c, o, row, ops[0])
                                            for c, o in zip(row.ops, ops)) \
                and _fmov_ok(row, ops):
            return row
    shown = ", ".join(map(repr, ops))
    raise error("E0900", f"internal compiler error: no AArch64 encoding for {mn} {shown}")


def encode(mn: str, *ops) -> tuple[int, Fixup | None]:
    """The instruction word of `mn ops` and its fixup (None when it names no symbol)."""
    if mn.startswith("b.") and mn != "b.cond":
        mn, ops = "b.cond", (mn[2:],) + ops
    row = select(mn, ops)
    word = row.enc(*ops) & 0xFFFFFFFF
    fix = None
    if row.fix is not None:
        target = next(o for o in ops if isinstance(o, (Sym, Page, Lo12, Mem)) and
                      not (isinstance(o, Mem) and o.lo12 is None))
        if isinstance(target, Mem):
            target = target.lo12
        kind = row.fix
        if isinstance(target, Page) and target.got:
            kind = "gotpage21"
        elif isinstance(target, Lo12) and target.got:
            if kind != "ldst64_lo12":
                raise error("E0900", "internal compiler error: a GOT :lo12: needs ldr x")
            kind = "got_lo12"
        name = target.name if isinstance(target, Sym) else target.sym
        fix = Fixup(kind, name, target.addend)
    return word, fix
