"""Diagnostics that name the fix for a newcomer's usual first mistakes: C's `i++`, a kernel
file compiled as host code, an executable without `main`, later-tier syntax."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def compile_(tmp_path: Path, source: str, *flags: str) -> subprocess.CompletedProcess:
    (tmp_path / "x.mettle").write_text(source)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", *flags, "x.mettle"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("stmt,op,col", [("i++;", "++", 41), ("++i;", "++", 40),
                                         ("i--;", "--", 41), ("--i;", "--", 40)])
def test_increment_names_the_replacement(tmp_path, stmt, op, col):
    proc = compile_(tmp_path, f"fn main() -> int32 {{ var i: int32 = 0; {stmt} return i; }}\n",
                    "--build")
    assert proc.returncode == 1
    assert f"error[E0002]: Mettle has no `{op}` operator\n --> x.mettle:1:{col}" in proc.stderr
    assert f"help: write `i = i {op[0]} 1;`" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_spaced_signs_are_still_unary_and_binary(tmp_path):
    proc = compile_(tmp_path, "fn main() -> int32 { var i: int32 = 3; return - -i + i - -i; }\n",
                    "--build")
    assert proc.returncode == 0, proc.stderr


def test_kernel_compiled_as_host_code_suggests_emit_ptx(tmp_path):
    proc = compile_(tmp_path, "kernel k(x: float32*) { x[thread.x] = 1.0; }\n")
    assert proc.returncode == 1
    assert "error[E0101]: undefined name `thread`" in proc.stderr
    assert "compile kernels with --emit-ptx or --emit-spirv" in proc.stderr


def test_undefined_name_in_host_code_has_no_gpu_hint(tmp_path):
    proc = compile_(tmp_path, "fn f() -> int32 { return thread; }\n")
    assert "error[E0101]" in proc.stderr and "--emit-ptx" not in proc.stderr


@pytest.mark.parametrize("target", ["x86_64-linux", "aarch64-linux", "x86_64-windows"])
def test_missing_main_says_so(tmp_path, target):
    proc = compile_(tmp_path, "fn helper() -> int32 { return 1; }\n", "--build",
                    f"--target={target}")
    assert proc.returncode == 1
    assert "error[E0601]: the program has no `main` function" in proc.stderr
    assert "fn main() -> int32" in proc.stderr and "add the library" not in proc.stderr


def test_not_supported_yet_cites_no_file_users_lack(tmp_path):
    # inline asm: the one construct still unimplemented (impl blocks, this test's first
    # input, are the later tier's now)
    proc = compile_(tmp_path, "fn main() -> int32 {\n    asm(\"nop\");\n    return 0;\n}\n")
    assert "error[E0009]" in proc.stderr, proc.stderr
    assert "LANGUAGE" not in proc.stderr and "§" not in proc.stderr
    assert "mettle explain E0009" in proc.stderr
