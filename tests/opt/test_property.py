"""Property: every pass preserves results on random programs.

Each random program (tests/opt/randprog.py) is printed, read back (so the test also
exercises the reader) and interpreted before any pass and after every pass of the -O
pipeline, on several inputs; every run must give the same return value and memory. A
separate check runs each pass alone right after mem2reg. Inputs on which the original
program traps (division by zero) are skipped: removing a dead trapping division is fine.
"""
from __future__ import annotations

import pytest

from toolchain.compiler.ir import format_module, verify_function
from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt.analyses import Analyses
from toolchain.compiler.opt.manager import PASSES, flat_pipeline
from tests.opt.property import execute
from tests.opt.randprog import INPUTS, random_module

SEEDS = range(32)


def _expected(fn):
    return [execute(fn, i) for i in INPUTS]


def _check(fn, expected, after: str, seed: int) -> None:
    verify_function(fn, ssa=True)
    for inp, want in zip(INPUTS, expected):
        if want[0] == "trap":
            continue
        got = execute(fn, inp)
        assert got == want, f"seed {seed}: {after} changed the result on {inp}"


@pytest.mark.parametrize("seed", SEEDS)
def test_pipeline_preserves_results(seed):
    text = format_module(random_module(seed))
    expected = _expected(parse_module(text).functions["f"])
    fn = parse_module(text).functions["f"]
    an = Analyses(fn)
    for name in flat_pipeline():
        p = PASSES[name]
        if p.run(fn, an):
            an.after_pass(p.invalidates)
        _check(fn, expected, name, seed)
    assert not any(i.op == "phi" for i in fn.instructions())


@pytest.mark.parametrize("name", [n for n in PASSES if n not in ("mem2reg", "out-of-ssa")])
def test_each_pass_alone_after_mem2reg(name):
    for seed in range(0, 64, 4):
        text = format_module(random_module(seed))
        expected = _expected(parse_module(text).functions["f"])
        fn = parse_module(text).functions["f"]
        an = Analyses(fn)
        PASSES["mem2reg"].run(fn, an)
        an.invalidate("all")
        PASSES[name].run(fn, an)
        _check(fn, expected, name, seed)
