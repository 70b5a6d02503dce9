"""`mettle explain CODE`: every diagnostic code the compiler can raise is explained, in the
CLI (the docs page of every code, docs/reference/errors.md, is tests/docs/test_error_codes.py)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from toolchain.compiler.diagnostic_codes import CODES, explain

ROOT = Path(__file__).resolve().parents[2]
CODE_RE = re.compile(r"""["']([EMW]\d{4})["']""")


def codes_in_compiler() -> set[str]:
    """Codes written as string literals anywhere in the toolchain (the table excluded)."""
    found = set()
    for path in (ROOT / "toolchain").rglob("*.py"):
        if path.name != "diagnostic_codes.py":
            found |= set(CODE_RE.findall(path.read_text(encoding="utf-8")))
    return found


def mettle(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_every_code_the_compiler_raises_is_explained():
    used = codes_in_compiler()
    assert len(used) > 50, "the grep found too few codes: did the literal style change?"
    assert sorted(used - CODES.keys()) == []


def test_explain_prints_the_title_and_text():
    proc = mettle("explain", "e0410")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("E0410: barrier under divergent control flow\n\n")
    assert proc.stdout == explain("E0410")


def test_explain_without_a_code_lists_every_code():
    proc = mettle("explain")
    assert proc.returncode == 0
    assert [line.split()[0] for line in proc.stdout.splitlines()] == list(CODES)


def test_unknown_code_is_a_usage_error_without_traceback():
    proc = mettle("explain", "E9999")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error[E0090]: usage: mettle explain CODE: unknown")
    assert "Traceback" not in proc.stderr and proc.stdout == ""
