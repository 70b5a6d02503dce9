"""Every ```mettle example of the user docs compiles as written (or fails as it says).

Checked: docs/reference/language.md, gpu.md, cli.md, and any other docs/*.md that contains the line
`<!-- mettle examples: checked -->` (docs that quote partial snippets opt in when ready).

The fence's info string says how an example is checked:
  ```mettle               compiles: to PTX (sm_90a) if it declares a kernel, else to an
                          object file (host code)
  ```mettle spirv         a kernel example that must also compile to SPIR-V
  ```mettle error=E0201   must fail with that diagnostic code (and no traceback)
  ```mettle fragment      a piece of a program, not checked (use sparingly)
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```mettle([^\n]*)\n(.*?)^```", re.M | re.S)
KERNEL = re.compile(r"^\s*kernel\b", re.M)
CHECKED = ("language.md", "gpu.md", "cli.md")
OPT_IN = "<!-- mettle examples: checked -->"


def examples():
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        text = doc.read_text(encoding="utf-8")
        if doc.name not in CHECKED and OPT_IN not in text:
            continue
        for m in FENCE.finditer(text):
            words = m.group(1).split()
            if "fragment" in words:
                continue
            line = text.count("\n", 0, m.start()) + 1
            yield pytest.param(words, m.group(2), id=f"{doc.name}:{line}")


def compile_example(tmp_path: Path, source: str, *flags: str) -> subprocess.CompletedProcess:
    (tmp_path / "example.mettle").write_text(source)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", *flags,
                           "example.mettle", "-o", "out"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("words,source", list(examples()))
def test_example(tmp_path, words, source):
    gpu = KERNEL.search(source) is not None
    flags = ("--emit-ptx", "--gpu-arch=sm_90a") if gpu else ("--emit-obj",)
    proc = compile_example(tmp_path, source, *flags)
    expected = [w.split("=", 1)[1] for w in words if w.startswith("error=")]
    if expected:
        assert proc.returncode == 1, f"expected {expected[0]}, compiled:\n{source}"
        assert f"error[{expected[0]}]" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    if "spirv" in words:
        proc = compile_example(tmp_path, source, "--emit-spirv")
        assert proc.returncode == 0, proc.stderr


def test_the_docs_have_examples():
    assert len(list(examples())) >= 15      # the extraction still finds them
