"""Property: unroll-jam preserves results on random matmul-shaped loop nests
(tests/opt/randnest.py), in the whole -O pipeline; it fires on most of them and refuses
the nests whose stores may feed the other copies' loads."""
from __future__ import annotations

import pytest

from toolchain.compiler.ir import format_module, verify_function
from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt.analyses import Analyses
from toolchain.compiler.opt.manager import PASSES, flat_pipeline
from tests.opt.property import execute
from tests.opt.randnest import random_nest

SEEDS = range(40)
INPUTS = ((0, 0, 1), (7, 5, 3), (9, 3, -2), (3, 11, 12345), (-4, 2, 5), (6, 0, 7))


def _fresh(seed: int):
    m = parse_module(format_module(random_nest(seed)))
    return m, m.functions["f"]


def _results(fn):
    return [execute(fn, list(i), fuel=2_000_000) for i in INPUTS]


def _pipeline(seed: int, gpu: bool = False):
    m, fn = _fresh(seed)
    an = Analyses(fn, m, gpu)
    for name in flat_pipeline():
        p = PASSES[name]
        if p.run(fn, an):
            an.after_pass(p.invalidates)
        verify_function(fn, ssa=True)
    return m, fn


@pytest.mark.parametrize("seed", SEEDS)
def test_unroll_jam_preserves_results(seed):
    _, fn = _fresh(seed)
    want = _results(fn)
    _, got = _pipeline(seed)
    for inp, w, g in zip(INPUTS, want, _results(got)):
        assert g == w, f"seed {seed}: -O changed the result on {inp}: {w} -> {g}"


def _jammed(m) -> bool:
    return any(r.pass_name == "unroll-jam" for r in m.remarks.items)


def test_unroll_jam_fires_only_where_it_may():
    fired = refused_alias = 0
    for seed in SEEDS:
        m, _ = _pipeline(seed)
        # a store into A or B (the arrays the inner loop reads) must keep the order
        if not random_nest(seed).name.endswith("C"):
            assert not _jammed(m), f"seed {seed}: jammed a nest whose store may be read"
            refused_alias += 1
        fired += _jammed(m)
    assert fired >= len(SEEDS) // 3 and refused_alias >= 3, (fired, refused_alias)


def test_gpu_nests_are_left_alone():
    for seed in range(6):
        m, _ = _pipeline(seed, gpu=True)
        assert not _jammed(m)
