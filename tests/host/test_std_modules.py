"""Standard library modules (std/core, std/conv, ...) built and run on every host target, at
-O0 and -O: each program is tests/host/std/NAME.mettle, its expected stdout NAME.out (exit
status 0). AArch64 runs under qemu-aarch64, Windows under Wine (skipped where missing)."""
from __future__ import annotations

from pathlib import Path

import pytest

from .cross import TARGETS, check_program

HERE = Path(__file__).parent / "std"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.mettle"))


@pytest.mark.parametrize("opt", ["-O0", "-O"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_std_module_program(tmp_path, name, target, opt):
    check_program(tmp_path, HERE / f"{name}.mettle", target, opt)
