"""Every ```mettle block of the docs and the README compiles as written (or fails as it says),
programs with `fn main` run and print what the page shows, and partial snippets are honest.

The fence attributes are described in tests/docs/pages.py.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .pages import ATTRIBUTES, ROOT, WRAPS, all_blocks, page_wraps, wrapped

KERNEL = re.compile(r"^\s*kernel\b", re.M)
MAIN = re.compile(r"^\s*fn\s+main\s*\(", re.M)
BLOCKS = [b for b in all_blocks("mettle") if "example" not in b.attrs   # test_error_codes
          and "proposed" not in b.attrs]


def test_proposed_syntax_appears_only_in_design_pages():
    """`mettle proposed` marks syntax a design page proposes (not implemented, so not
    compiled); no tutorial or reference page may show it."""
    pages = {str(b.page) for b in all_blocks("mettle") if "proposed" in b.attrs}
    assert all("/internals/" in p for p in pages), pages


def compile_(tmp_path: Path, source: str, *flags: str) -> subprocess.CompletedProcess:
    (tmp_path / "example.mettle").write_text(source)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", *flags,
                           "example.mettle", "-o", "out"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def check(tmp_path: Path, source: str, attrs: dict[str, str], output: str | None) -> None:
    gpu = KERNEL.search(source) is not None and not MAIN.search(source)
    flags = ("--emit-ptx", "--gpu-arch=sm_90a") if gpu else ("--emit-obj",)
    if "error" in attrs:
        proc = compile_(tmp_path, source, *flags)
        assert proc.returncode == 1, f"expected {attrs['error']}, compiled:\n{source}"
        assert f"error[{attrs['error']}]" in proc.stderr, proc.stderr
        assert " --> example.mettle:" in proc.stderr, "the diagnostic is located"
        assert "Traceback" not in proc.stderr
        return
    if MAIN.search(source):
        proc = compile_(tmp_path, source, "--build")
        assert proc.returncode == 0, proc.stderr
        run = subprocess.run([str(tmp_path / "out")], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60,
                             env=dict(os.environ, METTLE_CUDA_DRIVER="/nonexistent"))
        if output is not None:
            assert run.stdout == output, f"the page shows:\n{output}\nthe program printed:\n" \
                                         f"{run.stdout}{run.stderr}"
        else:
            assert run.returncode in (0, 2), run.stderr     # 2: a GPU program without GPU
        return
    assert output is None, "an ```output block follows code that has no main to run"
    proc = compile_(tmp_path, source, *flags)
    assert proc.returncode == 0, proc.stderr
    if "spirv" in attrs:
        proc = compile_(tmp_path, source, "--emit-spirv")
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_block(tmp_path, block):
    assert set(block.attrs) <= ATTRIBUTES["mettle"], f"unknown attribute: {block.attrs}"
    source = wrapped(block) if "partial" in block.attrs else block.text
    check(tmp_path, source, block.attrs, block.output)


@pytest.mark.parametrize("block", [b for b in BLOCKS if "partial" in b.attrs],
                         ids=lambda b: b.name)
def test_partial_blocks_really_are_partial(tmp_path, block):
    """A block marked partial must not compile on its own (else it should be unmarked), and
    its wrap must be one the page can name."""
    assert block.attrs["partial"] in WRAPS or block.attrs["partial"] in page_wraps(block.page)
    gpu = KERNEL.search(wrapped(block)) is not None
    flags = ("--emit-ptx", "--gpu-arch=sm_90a") if gpu else ("--emit-obj",)
    proc = compile_(tmp_path, block.text, *flags)
    assert proc.returncode != 0, "compiles as it stands: drop the partial= marker"


def test_the_docs_have_examples():
    assert len(BLOCKS) >= 40                         # the extraction still finds them
    assert sum(1 for b in BLOCKS if b.output is not None) >= 5
