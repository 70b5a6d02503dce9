"""Hardware tests of the FP8 workgroup region's split regions on the warp MMA
(targets/ptx/tensor/fp8_split_mma.py, docs/reference/gemm-fp8.md "Everywhere else") on the
H200: each case of bench/gemm_fallback.py --check in its own process (a fault or hang stays
there): small exact FP8 values bit for bit against the float oracle and against the exact
replay (16 work-items: a partial warp), on the pipeline's launch with leading dimensions
TMA refuses and on 256 work-items, through every load width, D's padding poisoned; random
E4M3/E5M2 data against the float64 oracle within the f32 summation-order bound; 200
back-to-back launches of 5000 x 3000 x 4104. tests/gpu/test_gemm_fp8.py's split launches
(256 work-items) run epilogues, mixed formats and the persistent loop on the same path.

    python3 -m pytest tests/gpu/test_gemm_fp8_split.py
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gemm_fallback.py"        # run as a script, as bench/gemm_fp8.py is
CASES = ["exact-300x520x200", "exact-129x264x392", "exact-1000x1000x4100",
         "exact-5000x3000x4104", "random-300x520x200", "random-1000x1000x4100",
         "random-5000x3000x4104", "stress-5000x3000x4104"]


@pytest.fixture(scope="module")
def hopper():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability(0) != (9, 0):
        pytest.skip("not a compute capability 9.0 (Hopper) GPU: the kernels are sm_90a")


def _script(*args, timeout=600):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_the_cases_are_the_scripts(hopper):
    proc = _script("--list", timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == CASES, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", CASES)
def test_fallback_case(hopper, case):
    proc = _script("--check", "--no-bench", "--case", case)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "FALLBACK CHECK OK" in out, out
