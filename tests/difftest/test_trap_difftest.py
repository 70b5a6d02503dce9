"""The differential tester's trap programs (tools/difftest/traps.py): random programs that
end in an access failing a run-time check. Every debug build (-O0 and -O) on every
available host target must print what the C oracle prints, then the located message, and
exit with status 1. One seed per kind of trap; `METTLE_TRAP_SEEDS=A:B` widens the batch.

Literal-range programs (tools/difftest/literals.py): a literal at the top of uint64 builds
and prints the same everywhere; one beyond it is the located E0005 on every target and level,
with no executable written."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.host.support import REPO
from tools.difftest.runner import cc_path
from tools.difftest.traps import KINDS, trap_case

SEEDS = os.environ.get("METTLE_TRAP_SEEDS", f"0:{len(KINDS)}")


def test_every_trap_kind_is_generated_and_located():
    cases = [trap_case(s) for s in range(len(KINDS))]
    assert sorted(c.kind for c in cases) == sorted(KINDS)
    for c in cases:
        line = c.mettle_lines[c.line - 1]
        assert line.startswith("    ") and c.col > 4, (c.kind, line)
        assert trap_case(c.seed).mettle() == c.mettle()       # reproducible from its seed


def test_trap_programs_fail_their_check_identically_everywhere():
    if cc_path() is None:
        pytest.skip("no C compiler (cc/gcc): tools/bootstrap installs gcc")
    r = subprocess.run([sys.executable, "-m", "tools.difftest", "--traps", "--seeds", SEEDS],
                       cwd=REPO, capture_output=True, text=True, timeout=1700)
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-3000:]
    assert " 0 disagreeing" in r.stdout


def test_literal_programs_are_accepted_or_refused_identically_everywhere():
    from tools.difftest.literals import KINDS as LITERAL_KINDS, literal_case
    cases = [literal_case(s) for s in range(4)]
    assert {c.kind for c in cases} == set(LITERAL_KINDS)
    if cc_path() is None:
        pytest.skip("no C compiler (cc/gcc): tools/bootstrap installs gcc")
    r = subprocess.run([sys.executable, "-m", "tools.difftest", "--literals", "--seeds", "0:4"],
                       cwd=REPO, capture_output=True, text=True, timeout=900)
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-3000:]
    assert " 0 disagreeing" in r.stdout
