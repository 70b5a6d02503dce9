"""Property: tail-recursion and inline-recursive preserve results on random recursive
functions (tests/opt/randrec.py), alone and followed by the whole -O pipeline; and they
do transform the functions they are meant for (not a vacuous pass)."""
from __future__ import annotations

import pytest

from toolchain.compiler.ir import format_module, verify_function
from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt.analyses import Analyses
from toolchain.compiler.opt.manager import PASSES, flat_pipeline
from tests.opt.property import execute
from tests.opt.randrec import random_recursive

SEEDS = range(48)
INPUTS = ((0, 3, 5), (1, -2, 9), (4, 7, -1), (6, 123456789, 42), (9, -1, 3))


def _fresh(seed: int):
    m = parse_module(format_module(random_recursive(seed)))   # (exercises the reader)
    return m, m.functions["r"]


def _results(fn):
    """Each input wrapped to its parameter's type (the interpreter takes values as given)."""
    return [execute(fn, [p.type.wrap(v) for p, v in zip(fn.params, i)], fuel=400_000)
            for i in INPUTS]


def _run(m, fn, names, gpu=False) -> set:
    an = Analyses(fn, m, gpu)
    ran = set()
    for name in names:
        p = PASSES[name]
        if p.run(fn, an):
            an.after_pass(p.invalidates)
            ran.add(name)
        verify_function(fn, ssa=True)
    return ran


def _same(seed, want, got, after):
    for inp, w, g in zip(INPUTS, want, got):
        assert g == w, f"seed {seed}: {after} changed the result on {inp}: {w} -> {g}"


@pytest.mark.parametrize("seed", SEEDS)
def test_recursion_passes_preserve_results(seed):
    m, fn = _fresh(seed)
    want = _results(fn)
    m1, fn1 = _fresh(seed)
    _run(m1, fn1, ["tail-recursion"])
    _same(seed, want, _results(fn1), "tail-recursion")
    _run(m1, fn1, ["inline-recursive"])
    _same(seed, want, _results(fn1), "inline-recursive")
    m2, fn2 = _fresh(seed)
    _run(m2, fn2, flat_pipeline())
    _same(seed, want, _results(fn2), "the -O pipeline")
    m3, fn3 = _fresh(seed)                  # every call a candidate, tail calls too
    _run(m3, fn3, ["inline-recursive", "mem2reg", "constfold", "gvn", "dce"])
    _same(seed, want, _results(fn3), "inline-recursive alone")


def test_the_passes_fire_on_most_random_functions():
    tre = inl = after = 0
    for seed in SEEDS:
        m, fn = _fresh(seed)
        ran = _run(m, fn, ["tail-recursion", "inline-recursive"])
        tre += "tail-recursion" in ran
        after += "inline-recursive" in ran      # what tail-recursion left as calls
        m, fn = _fresh(seed)
        inl += "inline-recursive" in _run(m, fn, ["inline-recursive"])
    assert tre >= len(SEEDS) // 2 and inl >= len(SEEDS) // 2 and after >= 4, \
        (tre, inl, after)


def test_gpu_code_keeps_its_recursion():
    """device_program refuses recursion after the optimizer: -O must not hide it."""
    for seed in range(8):
        m, fn = _fresh(seed)
        assert not _run(m, fn, ["tail-recursion", "inline-recursive"], gpu=True)


def test_big_frame_arrays_are_not_copied_into_every_level():
    """Eight copies of a 2400-byte array would make each real call's frame 19 KB."""
    from toolchain.compiler.ir import I64, Builder, Module
    from toolchain.compiler.ir.types import ArrayType
    for count, inlined in ((300, False), (4, True)):
        m = Module("frames")
        b = Builder(m)
        fn = b.function("walk", [("n", I64)], I64)
        b.position_at_end(b.append_block(fn, "entry"))
        arr = b.elemptr(b.alloca(ArrayType(I64, count), "buf"))
        b.store(arr, fn.params[0])
        base, rec = b.append_block(fn, "base"), b.append_block(fn, "rec")
        b.cbr(b.cmp("le", fn.params[0], b.const(I64, 0)), base, rec)
        b.position_at_end(base)
        b.ret(b.load(arr))
        b.position_at_end(rec)
        c = b.call(fn, [b.sub(fn.params[0], b.const(I64, 1))])
        b.ret(b.add(c, b.load(arr)))
        ran = _run(m, fn, ["tail-recursion", "inline-recursive"])
        assert ("inline-recursive" in ran) == inlined, count
        assert "tail-recursion" not in ran          # a frame array: no loop either
        assert [execute(fn, [v])[0] for v in (0, 3, 9)] == [0, 6, 45]
