"""Standard library modules (std/core, std/conv, ...) built and run on every host target, at
-O0 and -O: each program is tests/host/std/NAME.mettle, its expected stdout NAME.out (exit
status 0). AArch64 runs under qemu-aarch64, Windows under Wine (skipped where missing)."""
from __future__ import annotations

from pathlib import Path

import pytest

from .cross import TARGETS, build_for, check_program, run_on

HERE = Path(__file__).parent / "std"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.mettle"))


@pytest.mark.parametrize("opt", ["-O0", "-O"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_std_module_program(tmp_path, name, target, opt):
    check_program(tmp_path, HERE / f"{name}.mettle", target, opt)


def test_system_returns_the_raw_wait_status_on_linux(tmp_path):
    prog = ('import "std/io"\nimport "std/system"\n'
            'fn main() -> int32 { println_int((int64)system("exit 3")); return 0; }\n')
    exe = build_for(tmp_path, prog, "x86_64-linux", "system")
    r = run_on("x86_64-linux", exe)
    assert (r.returncode, r.stdout) == (0, "768\n")


@pytest.mark.parametrize("target", TARGETS)
def test_alloc_reports_a_write_after_free(tmp_path, target):
    from .cross import skip_unless_runnable
    skip_unless_runnable(target)
    prog = ('import "std/alloc"\n'
            "fn main() -> int32 {\n"
            "    var h: MemHeap* = mem_heap_create();\n"
            "    var p: cstring = mem_alloc(h, 24);\n"
            "    mem_free(h, p);\n"
            "    p[3] = 1;                          // the bug\n"
            "    for (var i: int32 = 0; i < 40; i = i + 1) { mem_free(h, mem_alloc(h, 24)); }\n"
            "    return 0;\n"
            "}\n")
    exe = build_for(tmp_path, prog, target, "uaf")
    r = run_on(target, exe)
    assert r.returncode == 134
    assert r.stderr.replace("\r\n", "\n").startswith("Fatal error: use-after-free detected\n")
