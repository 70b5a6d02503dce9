"""Register allocation under -O (targets/common/regalloc.py): intervals cover loops, no two
overlapping intervals share a register, loop values win registers, and optimised programs
print what unoptimised ones print (x86-64 Linux, AArch64 under qemu, Windows x64 under
Wine)."""
from __future__ import annotations

import pytest

from tests.host import test_programs
from tests.host.cross import build_for, run_on, why_not_runnable
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.opt.manager import optimize
from toolchain.compiler.targets.x86_64.isel import ALLOCATABLE
from toolchain.compiler.targets.common.regalloc import (allocate, coalesce, intervals,
                                                        liveness, loop_depths)

LOOP = """
fn work(n: int64) -> int64 {
    var acc: int64 = 0;
    var i: int64 = 0;
    while (i < n) { acc = acc + i * 3 - (acc >> 2); i = i + 1; }
    return acc;
}
fn main() -> int32 { return (int32)work(10); }
"""


def _fn(tmp_path, source, name):
    src = tmp_path / "p.mettle"
    src.write_text(source)
    module, _ = compile_to_ir(str(src), gpu=False)
    optimize(module, gpu=False)
    return next(f for f in module.functions.values() if f.name == name)


def test_loop_values_get_registers_and_intervals_never_share(tmp_path):
    fn = _fn(tmp_path, LOOP, "work")
    ivs = intervals(fn)
    out = allocate(fn, ALLOCATABLE)
    alias = coalesce(fn, liveness(fn)[1])

    def group(v):   # a local.get result coalesced with its Local shares its register
        return alias.get(id(v), id(v))

    by_reg = {}
    for key, reg in out.items():
        start, end, v = ivs[key]
        by_reg.setdefault(reg, {}).setdefault(group(v), []).append((start, end))
    for reg, groups in by_reg.items():
        spans = sorted((min(s for s, _ in g), max(e for _, e in g)) for g in groups.values())
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), (reg, spans)
    depth = loop_depths(fn)
    loop_blocks = [b for b in fn.blocks if depth[id(b)] > 0]
    assert loop_blocks
    loop_locals = [loc for loc in fn.locals if not loc.type.is_aggregate]
    assert loop_locals and all(id(loc) in out for loc in loop_locals)
    pos, loop_span = 0, []
    for b in fn.blocks:               # positions count instructions in block order
        if depth[id(b)] > 0:
            loop_span += [pos, pos + len(b.instrs) - 1]
        pos += len(b.instrs)
    for loc in loop_locals:           # loop-carried: live across the whole loop
        start, end, _ = ivs[id(loc)]
        assert start <= min(loop_span) and end >= max(loop_span)

PROGRAMS = {"recursion": test_programs.RECURSION, "structs": test_programs.STRUCTS,
            "pointers": test_programs.POINTERS, "control": test_programs.CONTROL,
            "many_args": test_programs.MANY_ARGS, "strings": test_programs.STRINGS}


@pytest.mark.parametrize("target", ["x86_64-linux", "aarch64-linux", "x86_64-windows"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_optimised_programs_print_the_same(tmp_path, name, target):
    why = why_not_runnable(target)
    if why:
        pytest.skip(why)
    source = PROGRAMS[name]
    plain = run_on(target, build_for(tmp_path, source, target, name + "0"))
    opt = run_on(target, build_for(tmp_path, source, target, name + "1", ["-O"]))
    assert (opt.stdout, opt.returncode) == (plain.stdout, plain.returncode), opt.stderr
