"""Generated kernels with the later tier in device code (later_kernels_gen.py), half of them
line-mutated, compiled to PTX and SPIR-V with and without -O: each compiles or fails with
located diagnostics (never E0900), and what compiles assembles (ptxas) and validates
(spirv-val)."""
from __future__ import annotations

import random

import pytest

from tests.support.spirv import validate
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

from .later_kernels_gen import generate
from .test_fuzz import mutate

SEEDS = range(40)


def compile_seed(tmp_path, seed: int, emit: str, optimize: bool):
    src = generate(seed)
    if seed % 2:
        src = mutate(src, random.Random(seed))
    path = tmp_path / "k.mettle"
    path.write_text(src)
    return compile_file(str(path), Options(emit=emit, optimize=optimize,
                                           gpu_arch="sm_90a" if emit == "ptx" else None))


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_kernels_compile_and_assemble_or_fail_cleanly(tmp_path, ptxas, seed):
    for emit in ("ptx", "spirv"):
        for optimize in (False, True):
            try:
                result = compile_seed(tmp_path, seed, emit, optimize)
            except CompileError as e:
                codes = [d.code for d in e.diagnostics]
                assert e.diagnostics and "E0900" not in codes, codes
                assert all(d.span is not None for d in e.diagnostics), codes
                return
            if emit == "ptx":
                ptxas(result.data.decode(), "sm_90a")
            else:
                validate(result.data)


def test_most_generated_kernels_compile(tmp_path):
    ok = 0
    for seed in SEEDS[::2]:                         # the unmutated ones
        try:
            compile_seed(tmp_path, seed, "ptx", True)
            ok += 1
        except CompileError:
            pass
    assert ok >= len(SEEDS[::2]) // 2, ok
