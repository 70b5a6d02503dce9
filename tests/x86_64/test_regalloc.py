"""Register allocation under -O (targets/common/regalloc.py): live ranges cover loops, no two
values live at one point share a register, loop copies coalesce, loop values win registers,
and optimised programs print what unoptimised ones print (x86-64 Linux, AArch64 under qemu, Windows x64 under
Wine)."""
from __future__ import annotations

import pytest

from tests.host import test_programs
from tests.host.cross import build_for, run_on, why_not_runnable
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.opt.manager import optimize
from toolchain.compiler.targets.x86_64.isel import ALLOCATABLE
from toolchain.compiler.targets.common.regalloc import (allocate, coalesce, live_ranges,
                                                        liveness, loop_depths, overlaps)

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


def test_loop_values_get_registers_and_live_values_never_share(tmp_path):
    fn = _fn(tmp_path, LOOP, "work")
    live_out = liveness(fn)[1]
    ranges, values = live_ranges(fn, live_out)
    out = allocate(fn, ALLOCATABLE)
    alias = coalesce(fn, live_out)
    by_reg = {}
    for key, reg in out.items():
        by_reg.setdefault(reg, []).append(key)
    for reg, keys in by_reg.items():   # two values live at one point never share a register,
        for a in keys:                 # except a local.get result and its unwritten Local
            for b in keys:
                if a < b and overlaps(ranges[a], ranges[b]):
                    assert alias.get(a) == b or alias.get(b) == a, (reg, values[a], values[b])
    depth = loop_depths(fn)
    loop_blocks = [b for b in fn.blocks if depth[id(b)] > 0]
    assert loop_blocks
    loop_locals = [loc for loc in fn.locals if not loc.type.is_aggregate]
    assert loop_locals and all(id(loc) in out for loc in loop_locals)
    pos, first, last = 0, {}, {}
    for b in fn.blocks:               # instruction k: use point 2k, def point 2k+1
        first[id(b)], last[id(b)] = 2 * pos, 2 * (pos + len(b.instrs)) - 1
        pos += len(b.instrs)
    head, latch = loop_blocks[0], loop_blocks[-1]
    for loc in loop_locals:           # loop-carried: live into the header, out of the latch
        rng = ranges[id(loc)]
        assert overlaps(rng, [(first[id(head)], first[id(head)])]), rng
        assert overlaps(rng, [(last[id(latch)], last[id(latch)])]), rng


def test_a_copy_into_a_loop_variable_shares_its_register(tmp_path):
    """`i = i + 1` at -O: the sum, the Local and its reads take one register, so the loop
    needs no register-to-register copies."""
    fn = _fn(tmp_path, LOOP, "work")
    out = allocate(fn, ALLOCATABLE)
    for block in fn.blocks:
        for ins in block.instrs:
            if ins.op == "local.set" and id(ins.operands[1]) in out:
                assert out[id(ins.operands[0])] is out[id(ins.operands[1])], ins


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
