"""Row selection (shortest form), labels and fixups, relocation records and diagnostics of
the x86-64 Assembler."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.x86_64.assembler import Assembler
from toolchain.compiler.targets.x86_64.emit import encode
from toolchain.compiler.targets.x86_64.operands import Imm, Mem, Sym, rip
from toolchain.compiler.targets.x86_64.regs import BY_NAME as R
from toolchain.linker.elf_consts import (R_X86_64_64, R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX,
                                         R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_REX_GOTPCRELX,
                                         STB_GLOBAL, STB_LOCAL, STT_FUNC, STT_SECTION)


@pytest.mark.parametrize("insn, length", [
    (("add", R["rax"], Imm(1)), 4),            # 48 83 /0 ib, not the imm32 form
    (("add", R["rax"], Imm(1000)), 7),         # 48 81 /0 id
    (("mov", R["eax"], Imm(5)), 5),            # B8+r id
    (("mov", R["rax"], Imm(-1)), 7),           # C7 /0 sign-extended imm32
    (("mov", R["rax"], Imm(1 << 40)), 10),     # movabs
    (("mov", R["rax"], Imm(0xFFFFFFFF)), 10),  # does not fit a sign-extended imm32
    (("mov", R["al"], R["sil"]), 3),           # forced REX for sil
    (("mov", R["rax"], Mem(R["rbp"])), 4),     # rbp base needs disp8 0
    (("mov", R["rax"], Mem(R["r12"])), 4),     # r12 base needs a SIB byte
])
def test_selection_picks_shortest_form(insn, length):
    assert len(encode(*insn).data) == length


def test_condition_aliases():
    assert encode("jz", Sym("x")).data == encode("je", Sym("x")).data
    assert encode("setnle", R["al"]).data == encode("setg", R["al"]).data
    assert encode("cmovnae", R["eax"], R["ecx"]).data == encode("cmovb", R["eax"], R["ecx"]).data


def test_bad_instructions_are_diagnostics():
    with pytest.raises(CompileError, match="unknown x86-64 mnemonic"):
        encode("frobnicate", R["rax"])
    with pytest.raises(CompileError, match="no x86-64 encoding"):
        encode("add", R["rax"], R["ecx"])  # mixed sizes
    with pytest.raises(CompileError, match="ambiguous"):
        encode("add", Mem(R["rax"]), Imm(1))  # size unknown without a register
    with pytest.raises(CompileError, match="ambiguous"):
        encode("movzx", R["eax"], Mem(R["rax"]))  # byte or word source?
    assert encode("add", Mem(R["rax"], size=16), Imm(1)).data == bytes.fromhex("66830001")
    with pytest.raises(ValueError):
        Mem(R["rax"], R["rsp"])  # rsp is never an index


def test_local_branches_are_resolved_without_relocations():
    a = Assembler()
    a.function("f")
    a.label(".top")
    a.emit("dec", R["ecx"])
    a.emit("jne", Sym(".top"))       # backward
    a.emit("jmp", Sym(".out"))       # forward
    a.emit("ud2")
    a.label(".out")
    a.emit("ret")
    obj = a.finish()
    text = obj.sections[".text"].data
    assert obj.sections[".text"].relocs == []
    # jne at 2, 6 bytes: rel32 = 0 - 8; jmp at 8, 5 bytes: rel32 = 15 - 13
    assert int.from_bytes(text[4:8], "little", signed=True) == -8
    assert int.from_bytes(text[9:13], "little", signed=True) == 2


def test_relocation_records():
    a = Assembler()
    a.function("main")
    a.emit("call", Sym("puts"))
    a.emit("mov", R["rax"], rip("stdout", got=True))
    a.emit("mov", R["eax"], rip("counter", got=True))
    a.emit("add", R["rax"], rip("stdout", got=True))
    a.emit("cmp", rip(".LC0", size=32), Imm(5))
    a.section(".rodata")
    a.label(".LC0")
    a.ascii(b"x\0")
    a.section(".data")
    a.data_symbol("table")
    a.pointer("main", 8)
    obj = a.finish()
    relocs = [(r.type, r.symbol, r.addend) for r in obj.sections[".text"].relocs]
    assert relocs == [
        (R_X86_64_PLT32, "puts", -4), (R_X86_64_REX_GOTPCRELX, "stdout", -4),
        (R_X86_64_GOTPCRELX, "counter", -4), (R_X86_64_GOTPCREL, "stdout", -4),
        (R_X86_64_PC32, ".rodata", -5),  # local label -> section symbol; imm8 follows
    ]
    assert [(r.type, r.symbol, r.addend) for r in obj.sections[".data"].relocs] == \
        [(R_X86_64_64, "main", 8)]
    syms = {s.name: s for s in obj.symbols}
    assert syms["main"].bind == STB_GLOBAL and syms["main"].type == STT_FUNC
    assert syms["puts"].section is None and syms["stdout"].section is None
    assert syms[".rodata"].type == STT_SECTION and syms[".rodata"].bind == STB_LOCAL
    assert ".LC0" not in syms


def test_bss_reserves_without_bytes_and_symbol_sizes():
    a = Assembler()
    a.section(".bss")
    a.data_symbol("buf", align=16)
    a.reserve(100)
    a.end_symbol("buf")
    obj = a.finish()
    assert obj.sections[".bss"].size == 100 and obj.sections[".bss"].data == b""
    assert obj.symbol("buf").size == 100
    with pytest.raises(CompileError):
        a.section(".bss")
        a.int(1, 4)
