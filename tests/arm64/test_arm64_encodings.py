"""Every row of arm64/encodings.py, encoded with low/high/zero/sp registers, both operand
sizes and edge immediates/offsets, is compared with capstone's disassembly text (mnemonic
and operands; numbers compared by value). Branch/adrp targets are left unresolved (0), so
capstone shows the instruction's own address."""
from __future__ import annotations

import re

import pytest

from toolchain.compiler.targets.arm64.encodings import ROWS, encode, invert
from toolchain.compiler.targets.arm64.operands import Imm, Lo12, Mem, Page, Sym
from toolchain.compiler.targets.arm64.regs import D, S, SP, W, WZR, X, XZR, Reg

capstone = pytest.importorskip("capstone", reason="capstone (pip install capstone) is missing")

ADDR = 0x1000


def _regs(cls: str, size: int) -> list[Reg]:
    bank, zr = (X, XZR) if size == 64 else (W, WZR)
    if cls == "r":
        return [bank[0], bank[9], bank[30], zr]
    if cls == "rs":
        return [bank[1], bank[17], SP if size == 64 else None, bank[30]]
    if cls == "rx":
        return [X[0], X[19], X[29], X[30]]
    if cls == "xw":
        return [X[0], X[10], X[30], X[3]]
    if cls == "w":
        return [W[0], W[11], W[30], WZR]
    if cls == "f":
        fb = D if size == 64 else S
        return [fb[0], fb[7], fb[31], fb[16]]
    if cls == "fs":
        return [S[0], S[5], S[31], S[8]]
    if cls == "fd":
        return [D[0], D[6], D[31], D[9]]
    raise KeyError(cls)


MEMS = {
    "mem": lambda size: [Mem(X[1]), Mem(SP, 8 * size), Mem(X[29], 4095 * size)],
    "memu": lambda size: [Mem(X[29], -256), Mem(SP, 255), Mem(X[2], -8)],
    "memr": lambda size: [Mem(X[1], index=X[2]), Mem(SP, index=X[17]),
                          Mem(X[29], index=X[30])],
    "memlo": lambda size: [Mem(X[16], lo12=Lo12("sym"))],
    "pre": lambda size: [Mem(SP, -16, "pre"), Mem(X[1], -512, "pre"), Mem(X[2], 504, "pre")],
    "post": lambda size: [Mem(SP, 16, "post"), Mem(X[3], -512, "post")],
    "pair": lambda size: [Mem(SP, 0), Mem(X[29], 16), Mem(X[4], -64)],
}
IMMS = {"aimm": [0, 1, 4095, 4096, 0xFFF000], "u16": [0, 1, 0x1234, 0xFFFF],
        "sh": [0, 16, 32, 48], "u6": [0, 1, 31], "cond": ["eq", "ne", "lt", "hi", "ge", "ls"],
        "b26": [Sym("target")], "b19": [Sym("target")], "page": [Page("sym")],
        "lo12": [Lo12("sym")]}


def _samples(row):
    sizes = (64, 32)
    if row.mn in ("stp", "ldp", "br", "blr", "adrp") or row.ops[:1] in (("xw",), ("rx",)):
        sizes = (64,)
    if row.size:  # load/store: the register class fixes the size
        sizes = (64,) if row.ops[0] in ("rx", "fd") else (32,)
    out = []
    for size in sizes:
        for k in range(4):
            ops = []
            for cls in row.ops:
                if cls in MEMS:
                    pool = MEMS[cls](row.size or 8)
                elif cls in IMMS:
                    pool = IMMS[cls]
                elif cls == "rw":
                    pool = [W[0], W[5]]
                else:
                    sz = size
                    if row.mn in ("scvtf", "ucvtf", "fcvtzs", "fcvtzu") and cls == "f":
                        sz = 96 - size if k % 2 else size   # mixed int/FP sizes
                    if row.size and cls in ("r", "f"):
                        sz = row.size * 8 if row.size >= 4 and cls == "f" else size
                    pool = _regs(cls, sz)
                pick = k + (1 if row.mn in ("stp", "ldp") and len(ops) == 1 else 0)
                ops.append(pool[pick % len(pool)])
            if any(o is None for o in ops):
                continue
            if row.ops and row.ops[-1] == "u6":
                ops[-1] = min(ops[-1], size - 1)
            if row.ops and row.ops[-1] == "sh" and size == 32:
                ops[-1] = ops[-1] % 32
            out.append(tuple(Imm(o) if isinstance(o, int) else o for o in ops))
    return out


def _num(m: re.Match) -> str:
    return "#" + str(int(m.group(1) + m.group(2), 16))


def _norm(text: str) -> str:
    text = re.sub(r"#(-?)0x([0-9a-f]+)", _num, text)
    return re.sub(r"\s+", " ", text.strip())


def _fmt(o) -> str:
    if isinstance(o, Reg):
        return o.name
    if isinstance(o, Imm):
        return f"#{o.value}"
    if isinstance(o, (Sym, Page)):
        return f"#{ADDR}"
    if isinstance(o, Lo12):
        return "#0"
    if isinstance(o, Mem):
        if o.index is not None:
            return f"[{o.base.name}, {o.index.name}]"
        if o.mode == "pre":
            return f"[{o.base.name}, #{o.offset}]!"
        if o.mode == "post":
            return f"[{o.base.name}], #{o.offset}"
        return f"[{o.base.name}, #{o.offset}]" if o.offset else f"[{o.base.name}]"
    return o


def expected(mn: str, ops: tuple) -> str:
    if mn in ("movz", "movn"):
        d, v, sh = ops
        val = v.value << sh.value
        if mn == "movn":
            val = ~val
        val &= (1 << d.size) - 1
        val = val - (1 << d.size) if val >> (d.size - 1) else val
        if mn == "movz" and v.value == 0 and sh.value:
            return f"movz {d.name}, #0, lsl #{sh.value}"
        if mn == "movn" and (v.value == 0 and sh.value or d.size == 32 and v.value == 0xFFFF):
            return f"movn {d.name}, #{v.value}" + (f", lsl #{sh.value}" if sh.value else "")
        return f"mov {d.name}, #{val}"
    if mn == "movk":
        d, v, sh = ops
        return f"movk {d.name}, #{v.value}" + (f", lsl #{sh.value}" if sh.value else "")
    if mn == "b.cond":
        return f"b.{ops[0]} {_fmt(ops[1])}"
    if mn in ("add", "sub", "cmp") and isinstance(ops[-1], Imm) and ops[-1].value >= 4096:
        regs = ", ".join(o.name for o in ops[:-1])
        return f"{mn} {regs}, #{ops[-1].value >> 12}, lsl #12"
    text = " ".join([mn, ", ".join(_fmt(o) for o in ops)])
    return text


def capstone_alias(mn: str, ops: tuple, text: str) -> str:
    """Spellings where capstone's preferred alias depends on the operands."""
    if not ops or mn == "mov":
        return text
    if mn == "add" and ops[1:] == (SP, Imm(0)) or mn == "add" and ops[0] is SP and \
            ops[2] == Imm(0):
        return f"mov {ops[0].name}, {ops[1].name}"
    if mn == "sub" and len(ops) == 3 and ops[1] in (XZR, WZR) and isinstance(ops[2], Reg) \
            and ops[0].name not in ("sp", "wsp"):
        return f"neg {ops[0].name}, {ops[2].name}"
    if mn == "subs" and ops[0] in (XZR, WZR):
        return f"cmp {ops[1].name}, {ops[2].name}"
    if mn == "subs" and ops[1] in (XZR, WZR):
        return f"negs {ops[0].name}, {ops[2].name}"
    if mn == "adds" and ops[0] in (XZR, WZR):
        return f"cmn {ops[1].name}, {ops[2].name}"
    if mn == "msub" and ops[3] in (XZR, WZR):
        return f"mneg {ops[0].name}, {ops[1].name}, {ops[2].name}"
    if mn == "ands" and ops[0] in (XZR, WZR):
        return f"tst {ops[1].name}, {ops[2].name}"
    if mn == "orr" and ops[1] in (XZR, WZR):
        return f"mov {ops[0].name}, {ops[2].name}"
    return text


def test_every_row_matches_capstone():
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    checked, failures = 0, []
    for row in ROWS:
        samples = _samples(row)
        assert samples, f"no samples for {row.mn} {row.ops}"
        for ops in samples:
            word, _fix = encode(row.mn, *ops)
            insns = list(md.disasm(word.to_bytes(4, "little"), ADDR))
            got = _norm(f"{insns[0].mnemonic} {insns[0].op_str}") if insns else "<invalid>"
            want = _norm(capstone_alias(row.mn, ops, expected(row.mn, ops)))
            checked += 1
            if got != want:
                failures.append(f"{row.mn} {row.ops} {ops}: ours {word:#010x} -> {got!r}, "
                                f"expected {want!r}")
    assert not failures, "\n".join(failures[:40])
    assert checked > 300


def test_fixups_name_their_relocation():
    assert encode("bl", Sym("puts"))[1].kind == "call26"
    assert encode("b", Sym(".L1"))[1].kind == "jump26"
    assert encode("b.ne", Sym(".L1"))[1].kind == "condbr19"
    assert encode("adrp", X[0], Page("stdout", got=True))[1].kind == "gotpage21"
    assert encode("ldr", X[0], Mem(X[0], lo12=Lo12("stdout", got=True)))[1].kind == "got_lo12"
    assert encode("ldr", W[1], Mem(X[0], lo12=Lo12("g")))[1].kind == "ldst32_lo12"
    assert encode("add", X[0], X[0], Lo12("g", 8))[1] .addend == 8


def test_zero_register_stores():
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    for mn, reg, want in (("str", XZR, "str xzr, [sp, #8]"), ("strb", WZR, "strb wzr, [sp, #8]"),
                          ("stur", WZR, "stur wzr, [x29, #-4]")):
        m = Mem(X[29], -4) if mn == "stur" else Mem(SP, 8)
        word, _ = encode(mn, reg, m)
        insn = next(md.disasm(word.to_bytes(4, "little"), 0))
        assert _norm(f"{insn.mnemonic} {insn.op_str}") == want


def test_condition_inversion():
    assert [invert(c) for c in ("eq", "lt", "hi", "ge")] == ["ne", "ge", "ls", "lt"]
