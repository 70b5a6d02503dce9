"""Locates and runs the `ptxas` assembler that tests check every emitted PTX module with.

Invariants: the assembler comes from the pinned `nvidia-cuda-nvcc` wheel (13.0.88, the GPU
machine's version), never from PATH or /usr/local, so results do not depend on the host's
CUDA install. `$METTLE_PTXAS` names another binary only when the wheel is absent (e.g. the
GPU machine running `python3 -m pytest tests/gpu` straight from the tree).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import stat
import subprocess
import tempfile
from pathlib import Path

WHEEL = "nvidia-cuda-nvcc"
# Where the wheel keeps ptxas inside the `nvidia` namespace package: 13.x uses cu13/,
# 12.x used cuda_nvcc/.
_NAMESPACE_LAYOUTS = ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas")


def _from_metadata() -> Path | None:
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.name == "ptxas" and f.parent.name == "bin":
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    return None


def _from_namespace() -> Path | None:
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or ()) if spec else ():
        for rel in _NAMESPACE_LAYOUTS:
            path = Path(root) / rel
            if path.is_file():
                return path
    return None


def _ensure_executable(path: Path) -> None:
    # Some installers drop the wheel's exec bit; restoring it is harmless when present.
    mode = path.stat().st_mode
    if not mode & stat.S_IXUSR:
        path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def find_ptxas() -> str | None:
    """Path of the wheel's ptxas, else `$METTLE_PTXAS` if it exists, else None."""
    path = _from_metadata() or _from_namespace()
    if path is not None:
        _ensure_executable(path)
        return str(path)
    override = os.environ.get("METTLE_PTXAS")
    if override and Path(override).is_file():
        return override
    return None


class PtxasError(AssertionError):
    """ptxas rejected a module; the message is ptxas's own output plus the command."""


def assemble(ptx_text: str, arch: str, ptxas: str | None = None) -> None:
    """Assemble `ptx_text` for `arch` (e.g. "sm_90a"); raise PtxasError with ptxas's message.

    PtxasError is an AssertionError, so pytest reports it as a test failure, not an error.
    """
    exe = ptxas or find_ptxas()
    if exe is None:
        raise PtxasError(f"ptxas not found: install {WHEEL} or set METTLE_PTXAS")
    with tempfile.TemporaryDirectory(prefix="mettle-ptxas-") as tmp:
        src = Path(tmp) / "module.ptx"
        src.write_text(ptx_text)
        cmd = [exe, f"--gpu-name={arch}", str(src), "-o", str(Path(tmp) / "module.cubin")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip()
        raise PtxasError(f"ptxas ({arch}) rejected the module:\n{message}")
