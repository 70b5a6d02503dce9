"""Each PTX golden case compiles to its blessed `.ptx` (tests/ptx/golden.py explains
blessing); every blessed module also assembles for its target."""
from __future__ import annotations

import pytest

from tests.ptx.golden import CASES, check, options_of
from toolchain.compiler import targets as T


@pytest.mark.parametrize("case", sorted(CASES.glob("*.mettle")), ids=lambda p: p.stem)
def test_ptx_golden(case):
    ok, msg = check(case)
    assert ok, msg


@pytest.mark.parametrize("case", sorted(CASES.glob("*.mettle")), ids=lambda p: p.stem)
def test_golden_ptx_assembles(case, ptxas):
    gold = case.with_suffix(".ptx")
    if not gold.exists() or gold.read_text().startswith("// error["):
        pytest.skip("no module: the case pins a refusal")
    ptxas(gold.read_text(), T.resolve_target("ptx", options_of(case.read_text())["gpu_arch"])
          .ptxas_arch)
