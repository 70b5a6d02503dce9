"""The differential tester in the suite: a bounded batch of seeded random host programs,
each built by Mettle at -O0 and -O on every available host target and compared with the
same program compiled by the system C compiler (tools/difftest). A longer run is
`python3 -m tools.difftest --seeds 1000:21000 --size 3 --out difftest-out`.

`METTLE_DIFFTEST_SEEDS=A:B` widens or narrows the batch."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.host.support import REPO
from tools.difftest.gen import generate
from tools.difftest.program import Print, Var
from tools.difftest.reduce import reduce_program
from tools.difftest.runner import cc_path

SEEDS = os.environ.get("METTLE_DIFFTEST_SEEDS", "0:300")


def test_programs_are_reproducible_from_their_seed():
    a, b = generate(123, 2), generate(123, 2)
    assert a.mettle() == b.mettle() and a.c() == b.c()
    assert generate(124, 2).mettle() != a.mettle()
    # a batch prefix renames top-level names only
    c = generate(123, 2, prefix="q123_")
    assert c.mettle().replace("q123_", "") == a.mettle()


def test_reducer_keeps_only_what_the_difference_needs():
    prog = generate(7, 3)
    main = prog.functions[-1]
    target = next(s for s in main.body if isinstance(s, Print) and isinstance(s.value, Var))
    name = target.value.name

    def interesting(p):       # stands in for "still disagrees": the print is still there
        return f"print_int({name})" in p.mettle()
    small, checks = reduce_program(prog, interesting)
    assert interesting(small) and checks > 0
    body = small.functions[-1].body
    assert len(body) <= 3, small.mettle()     # the print, its declaration, `return 0`


def test_random_programs_agree_with_c():
    if cc_path() is None:
        pytest.skip("no C compiler (cc/gcc): tools/bootstrap installs gcc")
    r = subprocess.run([sys.executable, "-m", "tools.difftest", "--seeds", SEEDS,
                        "--batch", "30", "--jobs", "2"], cwd=REPO, capture_output=True,
                       text=True, timeout=1700)
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-3000:]
    assert "0 disagreeing" in r.stdout and "0 skipped" in r.stdout
