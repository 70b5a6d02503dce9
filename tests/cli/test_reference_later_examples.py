"""The later-tier reference pages' examples compile, run and print what the page says.

Fences (the docs' own convention, docs/internals/checked_examples.md): ```mettle with a
`fn main` is built natively and run (exit status 0, and stdout equal to the ```output fence
right after it, when there is one), ```mettle error=CODE fails with that code (no
traceback), any other ```mettle block compiles to an object.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("traits.md", "generics.md", "enums-match.md", "defer.md", "closures.md",
         "new-sizeof.md", "import-str.md", "testing.md", "std-conv.md", "std-math.md", "std-system.md",
         "std-arena-strbuf.md", "std-alloc.md")
FENCE = re.compile(r"^```mettle([^\n]*)\n(.*?)^```\n(?:```output\n(.*?)^```)?", re.M | re.S)


def examples():
    for page in PAGES:
        text = (ROOT / "docs" / "reference" / page).read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            words = m.group(1).split()
            if any(w.startswith("partial=") for w in words):
                continue                        # tests/docs wraps and checks these
            line = text.count("\n", 0, m.start()) + 1
            yield pytest.param(words, m.group(2), m.group(3), id=f"{page}:{line}")


@pytest.mark.parametrize("words,source,output", list(examples()))
def test_reference_example(tmp_path, words, source, output):
    (tmp_path / "example.mettle").write_text(source)
    run = re.search(r"^\s*fn\s+main\s*\(", source, re.M) is not None
    flags = ("--build", "-o", "example") if run else ("--emit-obj", "-o", "example.o")
    proc = subprocess.run([sys.executable, "-m", "toolchain.compiler", "example.mettle",
                           *flags], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    expected = [w.split("=", 1)[1] for w in words if w.startswith("error=")]
    if expected:
        assert proc.returncode == 1 and f"error[{expected[0]}]" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    if run:
        r = subprocess.run([str(tmp_path / "example")], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        if output is not None:
            assert r.stdout == output
