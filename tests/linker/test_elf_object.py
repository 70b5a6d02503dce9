"""ELF64 relocatable objects: writer/reader round trip, readelf and pyelftools views, and a
link with the system `ld` (a cross-check only; our linker never calls it)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from toolchain.compiler.targets.x86_64.assembler import Assembler
from toolchain.compiler.targets.x86_64.operands import Imm, Mem, Sym, rip
from toolchain.compiler.targets.x86_64.regs import BY_NAME as R
from toolchain.linker.elf_consts import (R_X86_64_64, R_X86_64_PC32, R_X86_64_PLT32,
                                         SHT_NOBITS, STB_GLOBAL, STB_LOCAL)
from toolchain.linker.elf_reader import ElfError, read_object
from toolchain.linker.elf_writer import write_object


def exit_program(code: int) -> Assembler:
    """_start: code = helper() computed from .data/.rodata through relocations; exit(code)."""
    a = Assembler()
    a.function("_start")
    a.emit("call", Sym("helper"))
    a.emit("mov", R["edi"], R["eax"])
    a.emit("mov", R["eax"], Imm(60))  # SYS_exit
    a.emit("syscall")
    a.end_symbol("_start")
    a.function("helper", local=True)
    a.emit("mov", R["rax"], rip("value"))       # R_X86_64_PC32 to a global in .data
    a.emit("mov", R["rcx"], rip("ptr"))
    a.emit("mov", R["rcx"], Mem(R["rcx"]))      # through an R_X86_64_64 pointer
    a.emit("add", R["rax"], R["rcx"])
    a.emit("mov", rip("scratch", size=32), R["eax"])  # .bss store
    a.emit("ret")
    a.end_symbol("helper")
    a.section(".data")
    a.data_symbol("value")
    a.int(code - 2, 8)
    a.data_symbol("ptr")
    a.pointer(".two")
    a.section(".rodata")
    a.label(".two")
    a.int(2, 8)
    a.section(".bss")
    a.data_symbol("scratch")
    a.reserve(8)
    return a


def test_round_trip_is_exact():
    obj = exit_program(42).finish()
    data = write_object(obj)
    back = read_object(data)
    assert write_object(back) == data
    assert set(back.sections) == {".text", ".data", ".rodata", ".bss"}
    assert back.sections[".bss"].type == SHT_NOBITS and back.sections[".bss"].size == 8
    assert back.sections[".text"].data == obj.sections[".text"].data
    text_relocs = [(r.type, r.symbol) for r in back.sections[".text"].relocs]
    assert (R_X86_64_PC32, "value") in text_relocs and (R_X86_64_PC32, "ptr") in text_relocs
    assert [(r.type, r.symbol) for r in back.sections[".data"].relocs] == \
        [(R_X86_64_64, ".rodata")]
    binds = {s.name: s.bind for s in back.symbols}
    assert binds["_start"] == STB_GLOBAL and binds["helper"] == STB_LOCAL


def test_undefined_symbols_round_trip():
    a = Assembler()
    a.function("main")
    a.emit("call", Sym("puts"))
    back = read_object(write_object(a.finish()))
    puts = back.symbol("puts")
    assert puts is not None and not puts.defined and puts.bind == STB_GLOBAL
    assert back.sections[".text"].relocs[0].type == R_X86_64_PLT32


def test_reader_rejects_garbage():
    with pytest.raises(ElfError):
        read_object(b"not an elf file at all" * 4)


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is missing")
def test_readelf_accepts_object(tmp_path):
    path = tmp_path / "t.o"
    path.write_bytes(write_object(exit_program(42).finish()))
    r = subprocess.run(["readelf", "-a", "-W", str(path)], capture_output=True, text=True)
    assert r.returncode == 0 and "Warning" not in r.stderr and "Error" not in r.stderr
    for needle in ("REL (Relocatable file)", ".rela.text", ".rela.data", ".note.GNU-stack",
                   "R_X86_64_PC32", "R_X86_64_64", "GLOBAL DEFAULT", "_start"):
        assert needle in r.stdout


def test_pyelftools_reads_object():
    elftools = pytest.importorskip("elftools.elf.elffile", reason="pyelftools is missing")
    import io
    f = elftools.ELFFile(io.BytesIO(write_object(exit_program(42).finish())))
    assert f["e_type"] == "ET_REL" and f["e_machine"] == "EM_X86_64"
    names = {s.name for s in f.get_section_by_name(".symtab").iter_symbols()}
    assert {"_start", "helper", "value", "ptr", "scratch"} <= names
    rela = f.get_section_by_name(".rela.text")
    assert rela.num_relocations() == 3


@pytest.mark.skipif(shutil.which("ld") is None, reason="system ld (binutils) is missing")
def test_system_ld_links_our_object(tmp_path):
    obj, exe = tmp_path / "t.o", tmp_path / "t"
    obj.write_bytes(write_object(exit_program(42).finish()))
    subprocess.run(["ld", "-o", str(exe), str(obj)], check=True)
    assert subprocess.run([str(exe)]).returncode == 42
