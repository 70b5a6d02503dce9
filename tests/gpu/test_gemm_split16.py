"""Hardware tests of the 16-bit workgroup region's split regions on the warp MMA
(targets/ptx/tensor/split_mma16.py, docs/reference/gemm.md "Split regions") on the H200:
each case of bench/gemm_fallback16.py in its own process (a fault or hang stays there):
small exact f16/bf16 values bit for bit against the float64 oracle rounded once and
against the exact replay (16 work-items: a partial warp), on the pipeline's launch with
leading dimensions TMA refuses and on 256 work-items, through every load width and a
misaligned base, D's padding poisoned; random data against the float64 oracle within the
f32 summation-order bound; fused epilogues (one persistent); 200 back-to-back launches of
5000 x 3000 x 4100.

    python3 -m pytest tests/gpu/test_gemm_split16.py
"""
from __future__ import annotations

import pytest

from tests.gpu.bench_scripts import require_hopper, run_script

CASES = ["exact-f16-f32-300x520x200", "exact-bf16-bf16-129x264x393",
         "exact-f16-f16-1000x1000x4100", "random-f16-f32-1000x1000x4100",
         "random-bf16-f32-5000x3000x4100", "random-f16-bf16-300x520x203",
         "epilogue-f16-bf16-300x520x4100", "epilogue-bf16-f32-persistent-1000x1000x4100",
         "stress-5000x3000x4100"]


@pytest.fixture(scope="module")
def hopper():
    require_hopper()


def _script(*args, timeout=600):
    return run_script("gemm_fallback16.py", *args, timeout=timeout)


def test_the_cases_are_the_scripts(hopper):
    proc = _script("--list", timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == CASES, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", CASES)
def test_split16_case(hopper, case):
    proc = _script("--case", case)
    out = proc.stdout + proc.stderr
    print(out)                                  # the per-form lines (pytest -rP shows them)
    assert proc.returncode == 0 and "SPLIT16 CHECK OK" in out, out
