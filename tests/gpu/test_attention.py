"""The attention example (examples/attention) on a CUDA GPU with torch: every case of
examples/attention/check_attention.py against SDPA with FlashAttention's tolerance rule,
run in a subprocess; $METTLE_GPU_SANITIZER=memcheck|racecheck|synccheck runs it under
compute-sanitizer (the quick case list):

    python3 -m pytest tests/gpu/test_attention.py
    METTLE_GPU_SANITIZER=memcheck python3 -m pytest tests/gpu/test_attention.py
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "attention" / "check_attention.py"
SANITIZERS = ("memcheck", "racecheck", "synccheck")


def _reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device visible to torch"
    return None


pytestmark = pytest.mark.skipif(_reason() is not None, reason=str(_reason()))


def test_attention_matches_sdpa_on_random_and_adversarial_inputs():
    command = [sys.executable, str(SCRIPT)]
    tool = os.environ.get("METTLE_GPU_SANITIZER")
    if tool:
        if tool not in SANITIZERS:
            pytest.fail(f"METTLE_GPU_SANITIZER must be one of {SANITIZERS}")
        exe = shutil.which("compute-sanitizer")
        if exe is None:
            pytest.skip("compute-sanitizer is not on PATH")
        command = [exe, "--tool", tool, "--error-exitcode", "86", *command, "--quick"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=ROOT,
                          env={**os.environ, "PYTHONUNBUFFERED": "1",
                               "PYTHONPATH": str(ROOT)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "CHECK OK" in out, out
