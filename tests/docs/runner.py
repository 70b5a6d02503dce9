"""Runs a page's ```sh and ```python blocks the way a reader would: in a fresh directory
holding the page's file= blocks, with `mettle` and `python` on PATH (the compiler of this
checkout) and links to the repository's top-level folders, so `app/host.mettle` resolves.
Used by tests/docs (fake CUDA driver) and tests/gpu/test_docs_gpu.py (the real one)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .pages import ROOT, Block, wrapped

LINKED = ("bench", "std", "tests", "third_party", "toolchain", "tools")
COPIED = ("app", "examples")        # small; a page's commands write their outputs there


def prepare(block: Block, work: Path) -> dict[str, str]:
    """Fill `work` for `block`; return the environment to run it in."""
    for name, text in block.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    for name in COPIED:
        if not (work / name).exists():
            shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in LINKED:
        if not (work / name).exists():
            (work / name).symlink_to(ROOT / name)
    bin_dir = work / ".bin"
    bin_dir.mkdir(exist_ok=True)
    for name, command in (("mettle", f'"{sys.executable}" -m toolchain.compiler "$@"'),
                          ("python", f'"{sys.executable}" "$@"'),
                          ("python3", f'"{sys.executable}" "$@"')):
        shim = bin_dir / name
        shim.write_text(f"#!/bin/sh\nexec {command}\n")
        shim.chmod(0o755)
    return dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{bin_dir}:{os.environ['PATH']}")


def run(block: Block, work: Path, env_extra: dict[str, str] | None = None,
        timeout: int = 300) -> subprocess.CompletedProcess:
    """Run the page's earlier steps (a reader has done them: they make vadd.ptx and the
    like), then `block`; the result is the block's own."""
    env = prepare(block, work)
    env.update(env_extra or {})
    for step in block.steps:
        proc = _run_one(step, work, env, timeout)
        if proc.returncode != 0:
            return proc            # the step this block depends on fails: report that
    return _run_one(block, work, env, timeout)


def _run_one(block: Block, work: Path, env: dict[str, str],
             timeout: int) -> subprocess.CompletedProcess:
    if block.lang == "sh":
        command = ["bash", "-e", "-o", "pipefail", "-c", block.text]
    else:
        text = wrapped(block) if "partial" in block.attrs else block.text
        (work / "snippet.py").write_text(text)
        command = [sys.executable, "snippet.py"]
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                          timeout=timeout)
