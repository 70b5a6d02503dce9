"""Locates and runs `spirv-val`, the validator every emitted SPIR-V module is checked with.

Search order for the binary: `$METTLE_REPO_ROOT/.bootstrap/spirv-tools`, then the repository
holding this file (same sub-path), then PATH. The bootstrap copy comes from
tools/bootstrap/20-spirv-tools.sh (Debian 12's spirv-tools 2023.1, unpacked, no install).
`validate` fails the calling test with the validator's own message.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

_REL_BIN = Path(".bootstrap/spirv-tools/usr/bin")
_REL_LIB = Path(".bootstrap/spirv-tools/usr/lib/x86_64-linux-gnu")


def repo_roots() -> list[Path]:
    """Candidate repository roots: $METTLE_REPO_ROOT first, then this file's checkout."""
    roots = []
    if os.environ.get("METTLE_REPO_ROOT"):
        roots.append(Path(os.environ["METTLE_REPO_ROOT"]))
    roots.append(Path(__file__).resolve().parents[2])
    return roots


def find_tool(name: str) -> str | None:
    for root in repo_roots():
        path = root / _REL_BIN / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which(name)


def find_spirv_val() -> str | None:
    return find_tool("spirv-val")


def _env(tool: str) -> dict[str, str]:
    env = dict(os.environ)
    lib = Path(tool).parents[1] / "lib" / "x86_64-linux-gnu"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(lib),
                                                               env.get("LD_LIBRARY_PATH")]))
    return env


def run_tool(name: str, binary: bytes, *flags: str) -> subprocess.CompletedProcess:
    """Run a spirv-tools binary on `binary` (written to a temp file); skip if missing."""
    tool = find_tool(name)
    if tool is None:
        pytest.skip(f"{name} not found: run tools/bootstrap/20-spirv-tools.sh")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.spv"
        path.write_bytes(binary)
        return subprocess.run([tool, *flags, str(path)], capture_output=True, text=True,
                              env=_env(tool), timeout=60)


def validate(binary: bytes, target_env: str = "opencl2.0") -> None:
    """Fail the test (with spirv-val's message) unless `binary` validates under target_env."""
    proc = run_tool("spirv-val", binary, "--target-env", target_env)
    if proc.returncode != 0:
        pytest.fail(f"spirv-val --target-env {target_env} rejected the module:\n"
                    f"{proc.stdout}{proc.stderr}")


def rejects(binary: bytes, target_env: str = "opencl2.0") -> str:
    """spirv-val's message for a module it must reject; fails the test if it accepts it."""
    proc = run_tool("spirv-val", binary, "--target-env", target_env)
    if proc.returncode == 0:
        pytest.fail(f"spirv-val --target-env {target_env} accepted a module it should reject")
    return proc.stdout + proc.stderr
