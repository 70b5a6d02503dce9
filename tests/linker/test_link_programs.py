"""Programs hand-assembled with our Assembler, linked by our linker against glibc, run
natively: stdout and exit codes, determinism, readelf/pyelftools views, dlopen, -l libs."""
from __future__ import annotations

import io
import shutil
import struct
import subprocess

import pytest

from toolchain.compiler.targets.x86_64.assembler import Assembler
from toolchain.compiler.targets.x86_64.operands import Imm, Mem, Sym, rip
from toolchain.compiler.targets.x86_64.regs import BY_NAME as R
from toolchain.linker.elf_writer import write_object
from toolchain.linker.link import link


def _prologue(a: Assembler, name: str) -> None:
    a.function(name)
    a.emit("push", R["rbx"])  # also realigns the stack to 16 bytes for calls


def _epilogue(a: Assembler, name: str) -> None:
    a.emit("pop", R["rbx"])
    a.emit("ret")
    a.end_symbol(name)


def _string(a: Assembler, label: str, text: bytes) -> None:
    a.section(".rodata")
    a.label(label)
    a.ascii(text + b"\0")
    a.section(".text")


def run(tmp_path, objects, libraries=(), link_args=()):
    exe = tmp_path / "prog"
    image = link(objects, list(libraries), str(exe), list(link_args))
    assert exe.read_bytes() == image
    r = subprocess.run([str(exe)], capture_output=True, timeout=20)
    return r, image


def hello_program() -> Assembler:
    """puts, printf with a .rodata format, fputs(msg, stdout); returns 7."""
    a = Assembler()
    _prologue(a, "main")
    a.emit("lea", R["rdi"], rip(".hello"))
    a.emit("call", Sym("puts"))
    a.emit("lea", R["rdi"], rip(".fmt"))
    a.emit("mov", R["esi"], Imm(12345))
    a.emit("xor", R["eax"], R["eax"])  # varargs: no vector registers used
    a.emit("call", Sym("printf"))
    a.emit("lea", R["rdi"], rip(".msg"))
    a.emit("mov", R["rax"], rip("stdout", got=True))  # imported data: through the GOT
    a.emit("mov", R["rsi"], Mem(R["rax"]))
    a.emit("call", Sym("fputs"))
    a.emit("mov", R["eax"], Imm(7))
    _epilogue(a, "main")
    _string(a, ".hello", b"hello, world")
    _string(a, ".fmt", b"n=%d\n")
    _string(a, ".msg", b"via stdout\n")
    return a


def test_hello_world(tmp_path):
    r, _ = run(tmp_path, [write_object(hello_program().finish())])
    assert r.stdout == b"hello, world\nn=12345\nvia stdout\n"
    assert r.returncode == 7


def test_determinism(tmp_path):
    obj = write_object(hello_program().finish())
    first = link([obj], [])
    assert link([obj], []) == first
    assert link([write_object(hello_program().finish())], []) == first


def data_program() -> Assembler:
    """malloc/free, a .data global written and read back, an R_X86_64_64 function-pointer
    table in .data called indirectly, a .bss counter; exit code = sum of results."""
    a = Assembler()
    _prologue(a, "main")
    a.emit("mov", R["edi"], Imm(64))
    a.emit("call", Sym("malloc"))
    a.emit("mov", R["rbx"], R["rax"])
    a.emit("mov", Mem(R["rbx"], disp=56, size=64), Imm(5))  # use the last word
    a.emit("mov", R["rax"], Mem(R["rbx"], disp=56))
    a.emit("add", rip("global", size=32), R["eax"])      # global = 10 + 5
    a.emit("mov", R["rdi"], R["rbx"])
    a.emit("call", Sym("free"))
    a.emit("mov", R["rax"], rip("table", addend=8))       # table[1] = twenty
    a.emit("call", R["rax"])
    a.emit("add", R["eax"], rip("global"))                # 20 + 15
    a.emit("inc", rip("counter", size=32))
    a.emit("add", R["eax"], rip("counter"))               # + 1
    _epilogue(a, "main")
    for name, value in (("ten", 10), ("twenty", 20)):
        a.function(name, local=True)
        a.emit("mov", R["eax"], Imm(value))
        a.emit("ret")
    a.section(".data")
    a.data_symbol("global")
    a.int(10, 4)
    a.data_symbol("table")
    a.pointer("ten")
    a.pointer("twenty")
    a.section(".bss")
    a.data_symbol("counter")
    a.reserve(4)
    return a


def test_data_malloc_and_pointer_table(tmp_path):
    r, _ = run(tmp_path, [write_object(data_program().finish())])
    assert r.returncode == 20 + 15 + 1


def test_two_objects_and_object_file_inputs(tmp_path):
    lib = Assembler()
    lib.function("answer")
    lib.emit("mov", R["eax"], Imm(40))
    lib.emit("add", R["eax"], rip("bonus"))
    lib.emit("ret")
    lib.section(".data")
    lib.data_symbol("bonus")
    lib.int(2, 4)
    main = Assembler()
    main.function("main")
    main.emit("jmp", Sym("answer"))  # tail call across objects (R_X86_64_PLT32, local)
    r, _ = run(tmp_path, [main.finish(), write_object(lib.finish())])
    assert r.returncode == 42


def dlopen_program() -> Assembler:
    """h = dlopen("libc.so.6", RTLD_NOW); f = dlsym(h, "labs"); return f(-33)."""
    a = Assembler()
    _prologue(a, "main")
    a.emit("lea", R["rdi"], rip(".lib"))
    a.emit("mov", R["esi"], Imm(2))  # RTLD_NOW
    a.emit("call", Sym("dlopen"))
    a.emit("test", R["rax"], R["rax"])
    a.emit("je", Sym(".fail"))
    a.emit("mov", R["rdi"], R["rax"])
    a.emit("lea", R["rsi"], rip(".sym"))
    a.emit("call", Sym("dlsym"))
    a.emit("test", R["rax"], R["rax"])
    a.emit("je", Sym(".fail"))
    a.emit("mov", R["rdi"], Imm(-33))
    a.emit("call", R["rax"])
    _epilogue(a, "main")
    a.label(".fail")
    a.emit("mov", R["eax"], Imm(99))
    a.emit("pop", R["rbx"])
    a.emit("ret")
    _string(a, ".lib", b"libc.so.6")
    _string(a, ".sym", b"labs")
    return a


def test_dlopen_dlsym(tmp_path):
    r, _ = run(tmp_path, [write_object(dlopen_program().finish())], ["dl"])
    assert r.returncode == 33


def libm_program() -> Assembler:
    """return (int) llround(sqrt(6.25) * 10.0)  == 25 via libm; SSE through the ABI."""
    a = Assembler()
    _prologue(a, "main")
    a.emit("movsd", R["xmm0"], rip(".x"))
    a.emit("call", Sym("sqrt"))
    a.emit("mulsd", R["xmm0"], rip(".ten"))
    a.emit("call", Sym("llround"))
    _epilogue(a, "main")
    a.section(".rodata")
    a.align(8)
    a.label(".x")
    a.ascii(struct.pack("<d", 6.25))
    a.label(".ten")
    a.ascii(struct.pack("<d", 10.0))
    return a


def test_libm_with_dash_l(tmp_path):
    r, image = run(tmp_path, [write_object(libm_program().finish())], link_args=["-lm"])
    assert r.returncode == 25
    assert b"libm.so.6\0" in image


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is missing")
def test_readelf_program_headers_and_dynamic(tmp_path):
    exe = tmp_path / "prog"
    link([write_object(hello_program().finish())], ["m"], str(exe))
    r = subprocess.run(["readelf", "-lWd", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr
    out = r.stdout
    assert "EXEC (Executable file)" in out
    assert "[Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]" in out
    assert "Shared library: [libc.so.6]" in out and "Shared library: [libm.so.6]" in out
    assert "BIND_NOW" in out
    loads = [ln.split() for ln in out.splitlines() if ln.strip().startswith("LOAD")]
    # "LOAD off vaddr paddr filesz memsz FLAGS align": the flags are the words in between
    assert [" ".join(ld[6:-1]) for ld in loads] == ["R", "R E", "RW"]
    assert all(ld[-1] == "0x1000" for ld in loads)
    stack = next(ln.split() for ln in out.splitlines() if "GNU_STACK" in ln)
    assert stack[-2] == "RW"  # not executable


def test_pyelftools_reads_executable():
    elffile = pytest.importorskip("elftools.elf.elffile", reason="pyelftools is missing")
    f = elffile.ELFFile(io.BytesIO(link([write_object(hello_program().finish())], [])))
    assert f["e_type"] == "ET_EXEC"
    dyn = f.get_section_by_name(".dynamic")
    assert [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"] == ["libc.so.6"]
    imported = {s.name for s in f.get_section_by_name(".dynsym").iter_symbols()}
    assert {"puts", "printf", "fputs", "stdout", "__libc_start_main"} <= imported
    kinds = {r["r_info_type"] for r in f.get_section_by_name(".rela.dyn").iter_relocations()}
    assert kinds == {6}  # R_X86_64_GLOB_DAT for stdout
    assert f.get_section_by_name(".rela.plt").num_relocations() == 4


def test_got_slots_for_defined_symbols(tmp_path):
    """GOTPCREL to symbols defined in our objects (global and local) is filled statically
    with the same address a PC32 `lea` computes."""
    a = Assembler()
    a.function("main")
    a.emit("xor", R["eax"], R["eax"])
    for name in ("shared", ".private"):
        a.emit("mov", R["rcx"], rip(name, got=True))
        a.emit("lea", R["rdx"], rip(name))
        a.emit("cmp", R["rcx"], R["rdx"])
        a.emit("sete", R["r8b"])
        a.emit("movzx", R["r8d"], R["r8b"])
        a.emit("add", R["eax"], R["r8d"])
    a.emit("mov", R["rcx"], rip("shared", got=True))
    a.emit("add", R["eax"], Mem(R["rcx"]))  # + 40 through the GOT pointer
    a.emit("ret")
    a.section(".data")
    a.data_symbol("shared")
    a.int(40, 4)
    a.label(".private")
    a.int(0, 4)
    r, _ = run(tmp_path, [write_object(a.finish())])
    assert r.returncode == 42


def test_ifunc_imports_and_readelf_clean(tmp_path):
    """strlen/memcpy are STT_GNU_IFUNC in glibc: imported like any function, bound by ld.so."""
    a = Assembler()
    _prologue(a, "main")
    a.emit("lea", R["rdi"], rip("buf"))
    a.emit("lea", R["rsi"], rip(".text17"))
    a.emit("mov", R["edx"], Imm(18))
    a.emit("call", Sym("memcpy"))
    a.emit("mov", R["rdi"], R["rax"])
    a.emit("call", Sym("strlen"))
    _epilogue(a, "main")
    _string(a, ".text17", b"seventeen chars!!")
    a.section(".bss")
    a.data_symbol("buf")
    a.reserve(32)
    r, _ = run(tmp_path, [write_object(a.finish())])
    assert r.returncode == 17
    if shutil.which("readelf"):
        check = subprocess.run(["readelf", "-a", "-W", str(tmp_path / "prog")],
                               capture_output=True, text=True)
        assert check.returncode == 0 and check.stderr == ""
