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


# What -O keeps in xmm/volatile registers and folds into addresses: float32/float64 loop
# accumulators, negation, running minimum/maximum, compares, selects and conversions of register values,
# an array of 12-byte structs (index * 12 is not an x86 scale), narrow integer arrays,
# division by constants, a float argument passed from a loop value (kept out of caller-saved
# registers across the call), printf varargs.
FLOAT_LOOPS = """
import "std/mem";
extern fn printf_f(fmt: cstring, v: float64) -> int32 = "printf";
extern fn printf_i(fmt: cstring, v: int64) -> int32 = "printf";
struct P { x: float32; y: int32; z: uint16; }
fn half(v: float32) -> float32 { return v * 0.5; }
fn main() -> int32 {
    var ps: P* = (P*)malloc(12 * 40);
    var bytes: uint8* = (uint8*)malloc(40);
    var shorts: int16* = (int16*)malloc(80);
    for i in 0..40 {
        ps[i].x = (float32)i * 1.25 - 7.0;
        ps[i].y = (int32)(i * i) - 300;
        ps[i].z = (uint16)(i * 2000);
        bytes[i] = (uint8)(i * 37);
        shorts[i] = (int16)(i * 1000 - 20000);
    }
    var s32: float32 = 0.0;
    var s64: float64 = 1.0;
    var lo: float64 = 1000.0;
    var hi: float32 = -1000.0;
    var acc: int64 = 0;
    var u: uint32 = 7;
    for i in 0..40 {
        var x: float32 = ps[i].x;
        s32 = s32 + x * x - half(x);
        s64 = s64 * 1.01 + (float64)x / 3.0;
        var nx: float64 = -(float64)x;
        if (nx < lo) { lo = nx; }
        if (x > hi) { hi = x; }
        if (x < 0.0) { acc = acc + (int64)(x * 4.0); } else { acc = acc - (int64)ps[i].z; }
        var pick: float64 = nx;
        if (x > 2.5) { pick = s64; }
        acc = acc + (int64)pick + (int64)bytes[i] / 7 + (int64)shorts[i] % 10;
        u = u * 2654435761 + (uint32)ps[i].y / 3;
        acc = acc + (int64)(u % 1000) + (int64)(ps[i].y / -5);
    }
    printf_f("%.6f\n", (float64)s32);
    printf_f("%.6f\n", s64);
    printf_f("%.3f\n", lo);
    printf_f("%.3f\n", (float64)hi);
    printf_i("%lld\n", acc);
    printf_i("%lld\n", (int64)u);
    return 0;
}
"""

PROGRAMS = {"recursion": test_programs.RECURSION, "structs": test_programs.STRUCTS,
            "pointers": test_programs.POINTERS, "control": test_programs.CONTROL,
            "many_args": test_programs.MANY_ARGS, "strings": test_programs.STRINGS,
            "float_loops": FLOAT_LOOPS}


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
