"""Windows x64 images from our COFF objects and PE linker, read back with pefile (an
independent reader): headers, sections, imports, base relocations, checksum; determinism;
the frozen runtime object; link errors. Running them is tests/host/test_cross_corpus.py and
test_win64_*.py (under Wine)."""
from __future__ import annotations

import subprocess

import pytest

from tests.host.support import REPO, compile_cmd
from tests.pe.startup_source import assemble_start
from toolchain.compiler.diagnostics import CompileError
from toolchain.linker.coff import read_coff
from toolchain.linker.pe_imports import BUILTIN
from toolchain.linker.pe_link import link_pe
from toolchain.linker.pe_startup import START_CODE, START_RELOCS, START_SYMBOLS

pefile = pytest.importorskip("pefile", reason="pefile (pip install pefile) is missing")

SOURCE = """
import "std/io";
import "std/gpu";
extern fn printf_f(fmt: cstring, v: float64) -> int32 = "printf";
struct Pair { a: int64; b: int64; }
var TABLE: cstring[2] = ["one", "two"];
var HOOK: fn(int64) -> int64 = twice;
fn twice(x: int64) -> int64 { return 2 * x; }
fn main() -> int32 {
    println(TABLE[1]);
    printf_f("%g\\n", 0.5);
    println_int(HOOK(21));
    if (gpu_init() == 0) { println("no GPU"); }
    return 0;
}
"""


def _obj(tmp_path, source=SOURCE, name="prog") -> bytes:
    src = tmp_path / f"{name}.mettle"
    src.write_text(source)
    out = tmp_path / f"{name}.obj"
    r = subprocess.run(compile_cmd("--emit-obj", str(src), "-o", str(out),
                                   "--target=x86_64-windows"), cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


def test_runtime_object_bytes_come_from_the_assembler():
    obj = assemble_start().finish()
    assert bytes(obj.sections[".text"].data) == START_CODE
    assert [(r.offset, r.symbol, r.addend) for r in obj.sections[".text"].relocs] == \
        [(r.offset, r.symbol, -4) for r in START_RELOCS]
    got = [(s.name, s.value, s.size) for s in obj.symbols if s.section and s.name != ".text"]
    assert got == list(START_SYMBOLS)


def test_image_headers_sections_imports_relocations(tmp_path):
    obj = _obj(tmp_path)
    image = link_pe([obj])
    assert image == link_pe([obj])                                  # deterministic
    pe = pefile.PE(data=image)
    assert pe.FILE_HEADER.Machine == 0x8664 and pe.FILE_HEADER.TimeDateStamp == 0
    opt = pe.OPTIONAL_HEADER
    assert opt.Magic == 0x20B and opt.Subsystem == 3 and opt.ImageBase == 0x140000000
    assert opt.DllCharacteristics & 0x0160 == 0x0160   # HIGH_ENTROPY_VA, DYNAMIC_BASE, NX
    assert pe.verify_checksum()
    secs = {s.Name.rstrip(b"\0").decode(): s for s in pe.sections}
    assert list(secs) == [".text", ".rdata", ".data", ".bss", ".idata", ".reloc"]
    assert secs[".text"].Characteristics == 0x60000020
    assert secs[".data"].Characteristics & 0x80000000 and \
        not secs[".rdata"].Characteristics & 0x80000000
    for s in pe.sections:
        assert s.VirtualAddress % 0x1000 == 0 and s.PointerToRawData % 0x200 == 0
    entry = opt.AddressOfEntryPoint
    assert secs[".text"].contains_rva(entry)
    imports = {e.dll.decode(): {i.name.decode() for i in e.imports}
               for e in pe.DIRECTORY_ENTRY_IMPORT}
    assert set(imports) == {"ucrtbase.dll", "kernel32.dll"}
    assert {"LoadLibraryA", "GetProcAddress"} <= imports["kernel32.dll"]
    assert {"puts", "__acrt_iob_func", "__stdio_common_vfprintf", "exit",
            "_configure_narrow_argv"} <= imports["ucrtbase.dll"]
    assert "printf" not in imports["ucrtbase.dll"]          # our runtime object's shim
    for dll, names in imports.items():
        assert names <= BUILTIN[dll]
    # every ADDR64 field of the objects is a DIR64 base relocation (TABLE's two strings,
    # HOOK's function pointer, std/gpu's...), and each holds an address inside the image
    dir64 = [e.rva for b in pe.DIRECTORY_ENTRY_BASERELOC for e in b.entries if e.type == 10]
    addr64 = sum(1 for s in read_coff(obj).sections.values() for r in s.relocs if r.type == 1)
    assert len(dir64) == addr64 >= 3
    for rva in dir64:
        value = pe.get_qword_at_rva(rva)
        assert opt.ImageBase <= value < opt.ImageBase + opt.SizeOfImage


def test_independent_linker_accepts_our_coff(tmp_path):
    """MinGW's ld links our COFF object with its own CRT: the object format is standard."""
    gcc = "x86_64-w64-mingw32-gcc"
    if subprocess.run(["which", gcc], capture_output=True).returncode:
        pytest.skip(f"{gcc} is missing")
    src = tmp_path / "plain.mettle"
    src.write_text('extern fn puts(s: cstring) -> int32;\n'
                   'fn main() -> int32 { puts("hi"); return 3; }\n')
    obj = tmp_path / "plain.obj"
    r = subprocess.run(compile_cmd("--emit-obj", str(src), "-o", str(obj),
                                   "--target=x86_64-windows"), cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([gcc, "-o", str(tmp_path / "plain.exe"), str(obj)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    dump = subprocess.run(["x86_64-w64-mingw32-objdump", "-r", "-t", str(obj)],
                          capture_output=True, text=True).stdout
    assert "IMAGE_REL_AMD64_REL32" in dump and "main" in dump


def test_undefined_symbol_and_bad_library(tmp_path):
    src = 'extern fn no_such_fn() -> int32;\nfn main() -> int32 { return no_such_fn(); }\n'
    obj = _obj(tmp_path, src, "undef")
    with pytest.raises(CompileError) as e:
        link_pe([obj])
    assert e.value.diagnostics[0].code == "E0601"
    assert "no_such_fn" in e.value.diagnostics[0].message
    with pytest.raises(CompileError) as e:
        link_pe([_obj(tmp_path)], ["/nonexistent/foo.dll"])
    assert e.value.diagnostics[0].code == "E0603"


def test_cli_build_writes_a_pe(tmp_path):
    src = tmp_path / "p.mettle"
    src.write_text(SOURCE)
    out = tmp_path / "p.exe"
    r = subprocess.run(compile_cmd("--build", str(src), "-o", str(out),
                                   "--target=x86_64-windows"), cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:2] == b"MZ"
