"""Helpers for host-program tests: build Mettle sources with the real CLI and run them.

`build(tmp_path, source)` writes `source` to a .mettle file, runs
the CLI's `main()` with `--build` in a process (the same entry point as `mettle --build`) and
returns the executable's path; a failed compile fails the test with the diagnostics.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# What the compile processes below run: the CLI and the host backends, which the target
# registry loads by name. Imported here so that Pants' dependency inference gives every
# test using these helpers exactly those sources (and no others, e.g. not SPIR-V).
import toolchain.compiler.cli  # noqa: F401
import toolchain.compiler.targets.arm64  # noqa: F401
import toolchain.compiler.targets.x86_64  # noqa: F401
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
# `python -m toolchain.compiler` without the __main__ module (which inference cannot see):
# the same `main()`, reading sys.argv[1:], exiting as the `mettle` command does.
CLI_MAIN = "from toolchain.compiler.cli import main; main()"


def compile_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", CLI_MAIN, *args]


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
