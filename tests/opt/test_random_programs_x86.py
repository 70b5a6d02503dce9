"""Property on real hardware: random programs (tests/opt/randprog.py) compiled to x86-64
without and with the -O pipeline print the same results when run natively.

A `main` wrapper calls `@f` on every input of randprog.INPUTS with %p pointing at a
24-cell global preset like the interpreter's, then prints the return value and all cells.
Even seeds pass the inputs as constants (after inlining, -O folds the whole program, so
this checks constant folding against what x86-64 computes); odd seeds load them from a
global, so the optimized code itself runs.
An input on which the unoptimized program traps (integer division by zero: SIGFPE) is
not compared, as in the interpreter test. This covers what the interpreter cannot: the
backend consuming out-of-SSA slots, cross-block values and folded constants.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from toolchain.compiler.ir import F32, I32, I64, U8, U32, Builder, ptr
from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.ir import format_module
from toolchain.compiler.ir.types import ArrayType
from tests.opt.randprog import INPUTS, random_module

SEEDS = range(100, 110)


def _program(seed: int, inputs) -> object:
    """The random module plus `main` for one input (a trap then ends only that run)."""
    m = parse_module(format_module(random_module(seed)))
    b = Builder(m)
    cells = b.global_var("cells", ArrayType(I64, 24),
                         [(8 * k, I64, k * 1000003 - 7) for k in range(24)])
    pf = b.extern_function("printf", [("fmt", ptr(U8)), ("v", I64)], I32)
    main = b.function("main", [], I32)
    b.position_at_end(b.append_block(main, "entry"))
    fmt = b.elemptr(b.string_literal(b"%lld\n"))
    a, bb, c, x = inputs
    base = b.elemptr(cells)
    args = [b.const(I32, a), b.const(I32, bb), b.const(U32, c), b.const(F32, x)]
    if seed % 2:                 # odd seeds: inputs from memory, so -O cannot fold them away
        box = b.global_var("inputs", ArrayType(I64, 4), [(0, I32, a), (8, I32, bb),
                                                         (16, U32, c), (24, F32, x)])
        words = b.elemptr(box)
        args = [b.load(b.bitcast(b.ptradd(words, b.const(I64, k)), ptr(v.type)))
                for k, v in enumerate(args)]
    r = b.call(m.functions["f"], [*args, base])
    b.call(pf, [fmt, r])
    for k in range(24):
        b.call(pf, [fmt, b.load(b.ptradd(base, b.const(I64, k)))])
    b.ret(b.const(I32, 0))
    return m


def _run(tmp_path, m, name: str):
    from toolchain.compiler.targets.x86_64 import emit_object
    from toolchain.linker import link_executable
    exe = tmp_path / name
    exe.write_bytes(link_executable([emit_object(m)]))
    os.chmod(exe, 0o755)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_same_on_x86_with_O(seed, tmp_path):
    from toolchain.compiler.opt.manager import OptOptions, optimize
    for i, inputs in enumerate(INPUTS):
        plain = _run(tmp_path, _program(seed, inputs), f"plain{i}")
        if plain[0] != 0:
            continue                                  # trapped: nothing to compare
        m = _program(seed, inputs)
        optimize(m, gpu=False, options=OptOptions(verify_each=True))
        assert _run(tmp_path, m, f"opt{i}") == plain, f"seed {seed} input {inputs}"
