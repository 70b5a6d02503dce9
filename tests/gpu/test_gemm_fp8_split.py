"""Hardware tests of the FP8 workgroup region's split regions on the warp MMA
(targets/ptx/tensor/fp8_split_mma.py, docs/reference/gemm-fp8.md "Where it runs") on the
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

import pytest

from tests.gpu.bench_scripts import require_hopper, run_script

CASES = ["exact-300x520x200", "exact-129x264x392", "exact-1000x1000x4100",
         "exact-5000x3000x4104", "random-300x520x200", "random-1000x1000x4100",
         "random-5000x3000x4104", "stress-5000x3000x4104"]


@pytest.fixture(scope="module")
def hopper():
    require_hopper()


def _script(*args, timeout=600):
    return run_script("gemm_fallback.py", *args, timeout=timeout)


def test_the_cases_are_the_scripts(hopper):
    proc = _script("--list", timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == CASES, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", CASES)
def test_fallback_case(hopper, case):
    proc = _script("--check", "--no-bench", "--case", case)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "FALLBACK CHECK OK" in out, out
