"""Hardware tests that run a bench script's check cases, each in a process of its own (a
fault or hang stays there): the Hopper requirement and the script runner they share."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def require_hopper() -> None:
    """Skip unless torch sees a compute capability 9.0 GPU (the kernels are sm_90a)."""
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability(0) != (9, 0):
        pytest.skip("not a compute capability 9.0 (Hopper) GPU: the kernels are sm_90a")


def run_script(name: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """python3 bench/<name> args..., from the repository root, unbuffered."""
    return subprocess.run([sys.executable, str(ROOT / "bench" / name), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
