"""Every row of encodings.py, encoded with low/high registers (rax vs r9: low three bits
differ), rsp/r12 and rbp/r13 memory bases, no/8-bit/32-bit displacements and immediates of
each width, is compared with capstone's decoding: mnemonic, operand kinds, registers,
memory base/index/scale/displacement/size, immediate values and instruction length."""
from __future__ import annotations

import itertools

import pytest

from toolchain.compiler.targets.x86_64.emit import encode_row, imm_fits
from toolchain.compiler.targets.x86_64.encodings import ROWS
from toolchain.compiler.targets.x86_64.operands import Imm, Mem, Sym
from toolchain.compiler.targets.x86_64.regs import BY_NAME, XMMS, gpr

capstone = pytest.importorskip("capstone", reason="capstone (pip install capstone) is missing")
cs_x86 = pytest.importorskip("capstone.x86", reason="capstone (pip install capstone) is missing")

R = BY_NAME
MEMS = [
    Mem(R["rsp"]), Mem(R["r12"], disp=8), Mem(R["rbp"]), Mem(R["r13"], disp=0x12345),
    Mem(R["rax"], R["r9"], 4, -0x80), Mem(R["r9"], R["rax"], 8, 0x7F),
    Mem(R["rbx"], R["r12"], 2, 0x1000), Mem(index=R["r13"], scale=8, disp=0x40),
]
IMMS = {8: [0, 5, -128, 127], 16: [0x1234, -300], 32: [0x12345678, -0x80000000, -2],
        64: [0x123456789ABCDEF0, -0x8000000000000000, 0xFFFFFFFFFFFFFFFF]}
BRANCH_TARGET = 0x1234
# capstone 5 reports `comisd xmm, m64` as an xmmword operand; the SDM and objdump say QWORD.
CAPSTONE_MEM_SIZE_QUIRKS = {"comisd": 128}


def _regs(size: int) -> list:
    regs = [gpr(0, size), gpr(9, size)]
    if size == 8:
        regs.append(gpr(6, 8))  # sil: needs a bare REX prefix
    return regs


def candidates(cls: str, row) -> list:
    if cls == "cl":
        return [R["cl"]]
    if cls == "rel32":
        return [Sym("target")]
    if cls == "x":
        return [XMMS[0], XMMS[9]]
    if cls.startswith("xm"):
        return [XMMS[0], XMMS[9]] + [m.sized(int(cls[2:])) for m in MEMS]
    if cls.startswith("rm"):
        size = int(cls[2:])
        return _regs(size) + [m.sized(size) for m in MEMS]
    if cls == "m":
        return MEMS
    if cls.startswith("m"):
        return [m.sized(int(cls[1:])) for m in MEMS]
    if cls.startswith("r"):
        return _regs(int(cls[1:]))
    width = int(cls[1:])
    if cls.startswith("u"):
        return [Imm(v) for v in (0, 1, 31, 63, 255) if v < (1 << width)]
    values = [v for w in (8, 16, 32, 64) if w <= width for v in IMMS[w]]
    return [Imm(v) for v in values if imm_fits(v, width, row.bits)]


def cases():
    for row in ROWS:
        for ops in itertools.product(*(candidates(c, row) for c in row.ops)):
            yield row, ops


def _disasm():
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    return md


def _check_operand(insn, cs_op, ours, cls: str, row) -> None:
    name = insn.reg_name
    if isinstance(ours, Mem):
        assert cs_op.type == cs_x86.X86_OP_MEM
        m = cs_op.mem
        assert (name(m.base) if m.base else None) == (ours.base.name if ours.base else None)
        assert (name(m.index) if m.index else None) == (ours.index.name if ours.index else None)
        assert m.disp == ours.disp
        if ours.index is not None:
            assert m.scale == ours.scale
        if ours.size is not None:
            assert cs_op.size * 8 == CAPSTONE_MEM_SIZE_QUIRKS.get(row.mn, ours.size)
    elif isinstance(ours, Imm):
        assert cs_op.type == cs_x86.X86_OP_IMM
        mask = (1 << (8 if cls.startswith("u") else row.bits or 64)) - 1
        assert cs_op.imm & mask == ours.value & mask
    elif isinstance(ours, Sym):
        assert cs_op.type == cs_x86.X86_OP_IMM and cs_op.imm == BRANCH_TARGET
    else:
        assert cs_op.type == cs_x86.X86_OP_REG and name(cs_op.reg) == ours.name


def _normalise(mnemonic: str) -> str:
    return "mov" if mnemonic == "movabs" else mnemonic


def test_every_row_matches_capstone():
    md = _disasm()
    checked, rows_seen, failures = 0, set(), []
    for row, ops in cases():
        enc = encode_row(row, ops)
        data = bytearray(enc.data)
        if enc.ref is not None and enc.ref.kind == "branch":
            rel = BRANCH_TARGET - len(data)
            data[enc.ref.offset:enc.ref.offset + 4] = rel.to_bytes(4, "little", signed=True)
        insns = list(md.disasm(bytes(data), 0))
        where = f"{row} {ops} -> {bytes(data).hex()}"
        assert len(insns) == 1 and insns[0].size == len(data), where
        insn = insns[0]
        assert _normalise(insn.mnemonic) == row.mn, where
        assert len(insn.operands) == len(ops), f"{where}: {insn.op_str}"
        for cs_op, ours, cls in zip(insn.operands, ops, row.ops):
            try:
                _check_operand(insn, cs_op, ours, cls, row)
            except AssertionError:
                failures.append(f"{where}: capstone says {insn.mnemonic} {insn.op_str}")
        checked += 1
        rows_seen.add(id(row))
    assert not failures, "\n".join(failures[:40]) + f"\n... {len(failures)} mismatches"
    assert rows_seen == {id(r) for r in ROWS}  # no row escaped testing
    assert checked > 5000


def test_rip_relative_memory_matches_capstone():
    """RIP-relative forms, with an immediate after the displacement (cmp dword [rip+x], 5)."""
    from toolchain.compiler.targets.x86_64.assembler import Assembler
    from toolchain.compiler.targets.x86_64.operands import rip
    a = Assembler()
    a.emit("cmp", rip("here", size=32), Imm(5))
    a.emit("movsd", XMMS[9], rip("here"))
    a.emit("lea", R["r9"], rip("here", addend=4))
    a.label("here")
    code = bytes(a.finish().sections[".text"].data)
    insns = list(_disasm().disasm(code, 0))
    here = len(code)
    assert [i.mnemonic for i in insns] == ["cmp", "movsd", "lea"]
    for insn, extra in zip(insns, (0, 0, 4)):
        mem = next(op.mem for op in insn.operands if op.type == cs_x86.X86_OP_MEM)
        assert insn.reg_name(mem.base) == "rip"
        assert insn.address + insn.size + mem.disp == here + extra
