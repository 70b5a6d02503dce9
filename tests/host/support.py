"""Helpers for host-program tests: build Mettle sources with the real CLI and run them.

`build(tmp_path, source)` writes `source` to a .mettle file, runs
`python -m toolchain.compiler --build` (the same entry point as `mettle --build`) and
returns the executable's path; a failed compile fails the test with the diagnostics.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def compile_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolchain.compiler", *args]


def build(tmp_path: Path, source: str, name: str = "prog", extra=(), env=None) -> Path:
    src = tmp_path / f"{name}.mettle"
    src.write_text(source)
    exe = tmp_path / name
    r = subprocess.run(compile_cmd("--build", str(src), "-o", str(exe), *extra), cwd=REPO,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, f"compile failed:\n{r.stdout}{r.stderr}"
    return exe


def run(exe: Path, env_extra=None, cwd=None, timeout=60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([str(exe)], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)
