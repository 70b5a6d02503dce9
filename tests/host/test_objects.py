"""The object from --emit-obj is standard ELF (readelf, pyelftools, the system `ld`), builds
are byte-identical, and --build needs no cc/as/ld on PATH."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .support import CLI_MAIN, REPO, build, compile_cmd, run

SOURCE = """
import "std/io";
var table: int64[3] = [5, 6, 7];
var names: cstring = "abc";
fn total() -> int64 { return table[0] + table[1] + table[2]; }
fn main() -> int32 {
    println(names);
    println_int(total());
    fflush(get_stdout());
    return 0;
}
"""
EXPECTED = "abc\n18\n"


def _emit_obj(tmp_path) -> bytes:
    src = tmp_path / "o.mettle"
    src.write_text(SOURCE)
    obj = tmp_path / "o.o"
    r = subprocess.run(compile_cmd("--emit-obj", str(src), "-o", str(obj)), cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return obj


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf not installed")
def test_readelf_accepts_object(tmp_path):
    obj = _emit_obj(tmp_path)
    r = subprocess.run(["readelf", "-W", "-a", str(obj)], capture_output=True, text=True)
    assert r.returncode == 0 and "readelf: Error" not in r.stderr, r.stderr
    assert "REL (Relocatable file)" in r.stdout
    assert "Advanced Micro Devices X86-64" in r.stdout
    syms = subprocess.run(["readelf", "-W", "-s", str(obj)], capture_output=True,
                          text=True).stdout
    main = [line for line in syms.splitlines() if line.endswith(" main")]
    assert main and "GLOBAL" in main[0] and "FUNC" in main[0]


def test_pyelftools_reads_object(tmp_path):
    elftools = pytest.importorskip("elftools.elf.elffile")
    with open(_emit_obj(tmp_path), "rb") as f:
        elf = elftools.ELFFile(f)
        assert elf["e_type"] == "ET_REL" and elf["e_machine"] == "EM_X86_64"
        names = {s.name for s in elf.iter_sections()}
        assert {".text", ".data", ".rodata"} <= names
        symtab = elf.get_section_by_name(".symtab")
        defined = {s.name for s in symtab.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"}
        undefined = {s.name for s in symtab.iter_symbols()
                     if s["st_shndx"] == "SHN_UNDEF" and s.name}
        assert "main" in defined and "puts" in undefined
        rela = elf.get_section_by_name(".rela.text")
        assert rela is not None and rela.num_relocations() > 0


CRT_DIR = "/usr/lib/x86_64-linux-gnu"


@pytest.mark.skipif(shutil.which("ld") is None or
                    not os.path.exists(f"{CRT_DIR}/crt1.o"), reason="no system ld/crt files")
def test_system_ld_links_object(tmp_path):
    obj = _emit_obj(tmp_path)
    exe = tmp_path / "ld_exe"
    r = subprocess.run(["ld", "-o", str(exe), "-dynamic-linker", "/lib64/ld-linux-x86-64.so.2",
                        f"{CRT_DIR}/crt1.o", f"{CRT_DIR}/crti.o", str(obj), f"-L{CRT_DIR}",
                        "-lc", f"{CRT_DIR}/crtn.o"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = run(exe)
    assert (out.returncode, out.stdout) == (0, EXPECTED)


def test_builds_are_byte_identical(tmp_path):
    a = build(tmp_path, SOURCE, "first")
    b = build(tmp_path, SOURCE, "second")
    assert a.read_bytes() == b.read_bytes()
    assert run(a).stdout == EXPECTED


def test_build_needs_no_c_toolchain(tmp_path):
    """PATH holds only a directory with python: any cc/as/ld/gcc call would fail."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(sys.executable, bindir / "python")
    env = {"PATH": str(bindir), "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    src = tmp_path / "p.mettle"
    src.write_text(SOURCE)
    exe = tmp_path / "p"
    r = subprocess.run([str(bindir / "python"), "-c", CLI_MAIN, "--build",
                        str(src), "-o", str(exe)], cwd=REPO, env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert run(exe).stdout == EXPECTED
