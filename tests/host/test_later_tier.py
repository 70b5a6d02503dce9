"""Later-tier constructs (static_assert, qualified enums, methods, traits, generics, defer,
new, ...) built and run on every host target, at -O0 and -O.

Each program is tests/host/later/NAME.mettle; its expected stdout is NAME.out next to it
(exit status 0). x86-64 runs natively, AArch64 under qemu-aarch64 and Windows under Wine
(skipped where they are missing, see cross.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from .cross import TARGETS, build_for, run_on, skip_unless_runnable

HERE = Path(__file__).parent / "later"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.mettle"))


@pytest.mark.parametrize("opt", ["-O0", "-O"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_later_tier_program(tmp_path, name, target, opt):
    skip_unless_runnable(target)
    src = (HERE / f"{name}.mettle").read_text()
    exe = build_for(tmp_path, src, target, name, extra=() if opt == "-O0" else ("-O",))
    r = run_on(target, exe)
    assert (r.returncode, r.stdout.replace("\r\n", "\n")) == \
        (0, (HERE / f"{name}.out").read_text())
