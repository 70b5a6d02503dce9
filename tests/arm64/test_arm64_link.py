"""Linking AArch64 objects: the frozen `_start` bytes, the executable's headers and dynamic
tables (read back with pyelftools), PLT entries (disassembled with capstone) that load the
right .got.plt slot, relocation arithmetic, determinism and mixed-machine errors."""
from __future__ import annotations

import io
import struct

import pytest

from tests.arm64.startup_source import assemble_start
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.arm64.assembler import Assembler
from toolchain.compiler.targets.arm64.operands import Imm, Lo12, Mem, Page, Sym
from toolchain.compiler.targets.arm64.regs import FP, LR, SP, X
from toolchain.compiler.targets.x86_64.assembler import Assembler as X86Assembler
from toolchain.linker import relocs_aarch64 as r64
from toolchain.linker.arch import AARCH64
from toolchain.linker.elf_consts import (EM_AARCH64, R_AARCH64_ADR_PREL_PG_HI21,
                                         R_AARCH64_CALL26, R_AARCH64_LDST64_ABS_LO12_NC)
from toolchain.linker.elf_writer import write_object
from toolchain.linker.link import link
from toolchain.linker.relocs import RelocError
from toolchain.linker.startup import START_CODE_AARCH64, START_RELOCS_AARCH64

from .test_arm64_encodings import capstone  # noqa: F401  (skips without capstone)

elftools = pytest.importorskip("elftools.elf.elffile", reason="pyelftools is missing")
needs_libc = pytest.mark.skipif(
    not __import__("os").path.exists(AARCH64.lib_dirs[0] + "/libc.so.6"),
    reason="no arm64 C library (libc6-arm64-cross)")


def test_startup_bytes_come_from_the_assembler():
    obj = assemble_start().finish()
    assert bytes(obj.sections[".text"].data) == START_CODE_AARCH64
    assert obj.sections[".text"].relocs == list(START_RELOCS_AARCH64)


def _hello_object() -> bytes:
    a = Assembler()
    a.function("main")
    a.emit("stp", FP, LR, Mem(SP, -16, "pre"))
    a.emit("adrp", X[0], Page(".Lmsg"))
    a.emit("add", X[0], X[0], Lo12(".Lmsg"))
    a.emit("bl", Sym("puts"))
    a.emit("adrp", X[1], Page("stdout", got=True))
    a.emit("ldr", X[1], Mem(X[1], lo12=Lo12("stdout", got=True)))
    a.emit("movz", X[0], Imm(0), Imm(0))
    a.emit("ldp", FP, LR, Mem(SP, 16, "post"))
    a.emit("ret")
    a.end_symbol("main")
    a.section(".rodata")
    a.label(".Lmsg")
    a.ascii(b"hi\0")
    a.section(".data")
    a.data_symbol("table")
    a.pointer("puts")
    a.pointer("main")
    a.end_symbol("table")
    return write_object(a.finish())


@needs_libc
def test_executable_tables_and_plt():
    image = link([_hello_object()], [])
    assert image == link([_hello_object()], [])           # deterministic
    elf = elftools.ELFFile(io.BytesIO(image))
    assert elf["e_machine"] == "EM_AARCH64" and elf["e_type"] == "ET_EXEC"
    interp = elf.get_section_by_name(".interp").data()
    assert interp == b"/lib/ld-linux-aarch64.so.1\0"
    loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
    assert all(s["p_align"] == 0x10000 and s["p_vaddr"] % 0x10000 == s["p_offset"] % 0x10000
               for s in loads)
    rela = {r["r_info_type"] for r in elf.get_section_by_name(".rela.dyn").iter_relocations()}
    assert rela == {1025, 257}        # GLOB_DAT (stdout), ABS64 (puts in .data)
    plt_rela = list(elf.get_section_by_name(".rela.plt").iter_relocations())
    assert [r["r_info_type"] for r in plt_rela] == [1026, 1026]   # JUMP_SLOT
    plt = elf.get_section_by_name(".plt")    # __libc_start_main, puts (by name)
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    insns = [(i.mnemonic, i.op_str) for i in md.disasm(plt.data(), plt["sh_addr"])]
    for k, rel in enumerate(plt_rela):
        slot = rel["r_offset"]
        assert insns[4 * k:4 * k + 4] == [("adrp", f"x16, #{slot & ~0xFFF:#x}"),
                                          ("ldr", f"x17, [x16, #{slot & 0xFFF:#x}]"),
                                          ("add", f"x16, x16, #{slot & 0xFFF:#x}"),
                                          ("br", "x17")]
    dyn = {t.entry.d_tag for t in elf.get_section_by_name(".dynamic").iter_tags()}
    assert {"DT_FLAGS", "DT_NEEDED", "DT_JMPREL"} <= dyn


def test_reloc_arithmetic():
    data = bytearray(struct.pack("<I", 0x90000000))               # adrp x0, 0
    r64.apply(data, 0, R_AARCH64_ADR_PREL_PG_HI21, 0x412345, 0, 0x400FFC)
    word = struct.unpack("<I", data)[0]
    pages = ((word >> 29) & 3) | ((word >> 5) & 0x7FFFF) << 2
    assert pages == 0x12
    data = bytearray(struct.pack("<I", 0xF9400000))               # ldr x0, [x0]
    r64.apply(data, 0, R_AARCH64_LDST64_ABS_LO12_NC, 0x412348, 0, 0)
    assert (struct.unpack("<I", data)[0] >> 10) & 0xFFF == 0x348 // 8
    with pytest.raises(RelocError):
        r64.apply(bytearray(4), 0, R_AARCH64_LDST64_ABS_LO12_NC, 0x412344, 0, 0)
    data = bytearray(struct.pack("<I", 0x94000000))
    r64.apply(data, 0, R_AARCH64_CALL26, 0x1000, 0, 0x2000)
    assert struct.unpack("<I", data)[0] == 0x94000000 | ((-0x1000 >> 2) & 0x3FFFFFF)
    with pytest.raises(RelocError):
        r64.apply(bytearray(4), 0, R_AARCH64_CALL26, 1 << 28, 0, 0)


def test_objects_for_two_machines_are_refused():
    x = X86Assembler()
    x.function("main")
    x.emit("ret")
    x.end_symbol("main")
    with pytest.raises(CompileError) as e:
        link([write_object(x.finish()), _hello_object()], [])
    assert e.value.diagnostics[0].code == "E0600"


@needs_libc
def test_library_for_another_machine_is_refused():
    with pytest.raises(CompileError) as e:
        link([_hello_object()], ["/lib/x86_64-linux-gnu/libm.so.6"])
    assert e.value.diagnostics[0].code == "E0603"
    assert "aarch64-linux" in e.value.diagnostics[0].message


def test_object_machine_round_trips():
    from toolchain.linker.elf_reader import read_object
    assert read_object(_hello_object()).machine == EM_AARCH64
