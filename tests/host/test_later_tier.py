"""Later-tier constructs (static_assert, qualified enums, methods, traits, generics, defer,
new, ...) built and run on every host target, at -O0 and -O.

Each program is tests/host/later/NAME.mettle; its expected stdout is NAME.out next to it
(exit status 0). x86-64 runs natively, AArch64 under qemu-aarch64 and Windows under Wine
(skipped where they are missing, see cross.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from .cross import TARGETS, check_program

HERE = Path(__file__).parent / "later"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.mettle"))


@pytest.mark.parametrize("opt", ["-O0", "-O"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_later_tier_program(tmp_path, name, target, opt):
    check_program(tmp_path, HERE / f"{name}.mettle", target, opt)
