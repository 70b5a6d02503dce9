"""The frozen `_start` bytes agree with our Assembler, the PLT disassembles to jumps through
.got.plt, and link errors are diagnostics naming the symbol and object."""
from __future__ import annotations

import io

import pytest

from tests.linker.startup_source import assemble_start
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.x86_64.assembler import Assembler
from toolchain.compiler.targets.x86_64.operands import Imm, Sym, rip
from toolchain.compiler.targets.x86_64.regs import BY_NAME as R
from toolchain.linker.elf_writer import write_object
from toolchain.linker.link import link, parse_link_args
from toolchain.linker.startup import START_CODE, START_RELOCS, start_object


def test_startup_bytes_come_from_the_assembler():
    obj = assemble_start().finish()
    assert bytes(obj.sections[".text"].data) == START_CODE
    assert obj.sections[".text"].relocs == list(START_RELOCS)
    assert write_object(start_object())  # the frozen object serialises


def _main_returning(value: int, extra=None) -> Assembler:
    a = Assembler()
    a.function("main")
    if extra:
        extra(a)
    a.emit("mov", R["eax"], Imm(value))
    a.emit("ret")
    return a


def test_plt_entries_jump_through_got_plt():
    capstone = pytest.importorskip("capstone", reason="capstone is missing")
    elffile = pytest.importorskip("elftools.elf.elffile", reason="pyelftools is missing")
    prog = _main_returning(0, lambda a: a.emit("call", Sym("abort")))
    f = elffile.ELFFile(io.BytesIO(link([prog.finish()], [])))
    plt, got_plt = f.get_section_by_name(".plt"), f.get_section_by_name(".got.plt")
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    slots = []
    for k in range(plt["sh_size"] // 16):
        insn = next(md.disasm(plt.data()[16 * k:16 * k + 16], plt["sh_addr"] + 16 * k))
        assert insn.mnemonic == "jmp"
        mem = insn.operands[0].mem
        slots.append(insn.address + insn.size + mem.disp)
    assert slots == [got_plt["sh_addr"] + 8 * (3 + k) for k in range(len(slots))]
    assert {r["r_offset"] for r in f.get_section_by_name(".rela.plt").iter_relocations()} \
        == set(slots)


def test_undefined_symbol_names_symbol_and_object():
    prog = _main_returning(0, lambda a: a.emit("call", Sym("no_such_function_xyz")))
    obj = write_object(prog.finish())
    with pytest.raises(CompileError) as e:
        link([obj], [])
    d = e.value.diagnostics[0]
    assert d.code == "E0601" and "no_such_function_xyz" in d.message
    assert "<input 0>" in d.message


def test_duplicate_definition():
    with pytest.raises(CompileError) as e:
        link([_main_returning(1).finish(), _main_returning(2).finish()], [])
    assert e.value.diagnostics[0].code == "E0602" and "'main'" in e.value.diagnostics[0].message


def test_imported_data_needs_the_got():
    prog = _main_returning(0, lambda a: a.emit("mov", R["rax"], rip("stdout")))
    with pytest.raises(CompileError) as e:
        link([prog.finish()], [])
    d = e.value.diagnostics[0]
    assert d.code == "E0605" and "stdout" in d.message and "GOT" in d.help


def test_missing_library_and_bad_arguments():
    with pytest.raises(CompileError) as e:
        link([_main_returning(0).finish()], ["no_such_library_xyz"])
    assert e.value.diagnostics[0].code == "E0603"
    with pytest.raises(CompileError) as e:
        parse_link_args(["--frobnicate"])
    assert e.value.diagnostics[0].code == "E0600"
    assert parse_link_args(["-lm", "-l", "dl", "-L/opt/x", "-rpath", "/opt/r"]) == \
        (["m", "dl"], ["/opt/x"], "/opt/r")


def test_bad_object_bytes_are_a_diagnostic():
    with pytest.raises(CompileError) as e:
        link([b"\x7fELF garbage"], [])
    assert e.value.diagnostics[0].code == "E0600"
