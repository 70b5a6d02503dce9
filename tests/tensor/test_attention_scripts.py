"""bench/attention.py and examples/attention/check_attention.py are GPU scripts; here they
must at least start, and the benchmark must say why it did nothing (exit 0) where there is
no torch or no CUDA device."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_bench_without_a_gpu_says_why_and_exits_0():
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a CUDA device is present: the benchmark would run for minutes")
    except ImportError:
        pass
    proc = run("bench/attention.py")
    assert proc.returncode == 0 and "nothing to do" in proc.stdout, proc.stdout + proc.stderr


def test_bench_shapes_parse():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import attention
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert [attention.parse_shape(s) for s in attention.SHAPES] == [
        (16, 16, 2048, 64), (8, 16, 4096, 128), (2, 16, 16384, 128)]


def test_check_script_documents_its_rule():
    proc = run("-c", "import examples.attention.check_attention as c; print(c.__doc__)")
    assert proc.returncode == 0 and "2 * max|out_pt - out_ref|" in proc.stdout, proc.stderr
