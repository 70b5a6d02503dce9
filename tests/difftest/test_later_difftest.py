"""Later-tier programs (tools/difftest/later.py: generics, traits and methods, closures,
tagged enums and match, defer/errdefer, new, import_str) built by Mettle at -O0 and -O on
every available host target (x86-64 Linux natively, AArch64 under qemu, Windows under Wine)
and compared with their C translation. `METTLE_DIFFTEST_LATER_SEEDS=A:B` widens the batch;
`python3 -m tools.difftest --later --seeds 0:200` is the long run."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.host.support import REPO
from tools.difftest.later import CONSTRUCTS, later_program
from tools.difftest.runner import cc_path

SEEDS = os.environ.get("METTLE_DIFFTEST_LATER_SEEDS", "0:6")


def test_every_program_has_every_construct_and_is_reproducible():
    a, b = later_program(5), later_program(5)
    assert a.mettle() == b.mettle() and a.c() == b.c() and a.files == b.files
    assert later_program(6).mettle() != a.mettle()
    text = a.mettle()
    assert all(f"fn case_{n}() {{" in text for n in CONSTRUCTS)
    for needle in ("<T>", "trait ", "impl ", "method ", "Fn(int64) -> int64", "match (",
                   "defer ", "errdefer ", "new ", "import_str "):
        assert needle in text, needle


def test_later_tier_programs_agree_with_c():
    if cc_path() is None:
        pytest.skip("no C compiler (cc/gcc): tools/bootstrap installs gcc")
    r = subprocess.run([sys.executable, "-m", "tools.difftest", "--later", "--seeds", SEEDS],
                       cwd=REPO, capture_output=True, text=True, timeout=1700)
    print(r.stdout[-3000:], r.stderr[-2000:])
    assert r.returncode == 0, r.stdout[-20000:] + r.stderr[-3000:]
    assert "0 disagreeing" in r.stdout and "0 skipped" in r.stdout
