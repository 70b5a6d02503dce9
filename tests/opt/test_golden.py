"""Each pass on IR text matches its blessed output (tests/opt/golden.py explains blessing)."""
from __future__ import annotations

import pytest

from tests.opt.golden import CASES, check


@pytest.mark.parametrize("case", sorted(CASES.glob("*.ir")), ids=lambda p: p.stem)
def test_pass_golden(case):
    ok, msg = check(case)
    assert ok, msg
