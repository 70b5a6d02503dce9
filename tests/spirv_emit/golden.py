"""Golden-file comparison for disassembled SPIR-V, with a bless mode.

`check_golden(name, text)` compares `text` with tests/spirv_emit/golden/<name>.spvasm and
fails with a unified diff on a mismatch. With METTLE_BLESS=1 in the environment it
(re)writes the file instead; review the diff in git before committing blessed files.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN_DIR / f"{name}.spvasm"
    if os.environ.get("METTLE_BLESS") == "1":
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"no golden file {path}; run with METTLE_BLESS=1 to create it")
    want = path.read_text()
    if want != text:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                            f"golden/{name}.spvasm", "emitted"))
        pytest.fail(f"emitted SPIR-V differs from golden/{name}.spvasm "
                    f"(METTLE_BLESS=1 rewrites it):\n{diff}")
