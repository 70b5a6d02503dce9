"""Random scalar kernels (tools/difftest/kernels.py) through both GPU paths: PTX assembled
by ptxas, SPIR-V validated by spirv-val and executed on PoCL (when the trixie root is
bootstrapped), every output compared with the same body compiled as C on the CPU. The PTX
half runs on hardware in test_kernels_gpu.py."""
from __future__ import annotations

import tempfile

import pytest

from tests.difftest.kernel_cases import KNOWN, SEEDS, random_kernel_failures
from tests.support import ptxas, spirv
from tests.support.opencl import opencl_available
from tools.difftest.kernel_runs import PTX_ARCH, build, run_spirv
from tools.difftest.kernels import generate_kernel


@pytest.mark.parametrize("seed,opt", [
    pytest.param(s, o, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[(s, o)])]
                 if (s, o) in KNOWN else []) for s in list(SEEDS)[:12] for o in ("O0", "O")])
def test_kernel_compiles_for_both_paths(seed, opt):
    case = generate_kernel(seed)
    with tempfile.TemporaryDirectory() as d:
        ptx, spv = build(case, d, "ptx", opt), build(case, d, "spirv", opt)
    if ptxas.find_ptxas():
        ptxas.assemble(ptx.decode(), PTX_ARCH)
    if spirv.find_spirv_val():
        spirv.validate(spv)


@pytest.mark.parametrize("opt", ["O0", "O"])
def test_random_kernels_on_pocl_match_c(opt):
    pytest.importorskip("numpy")
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)
    failures = random_kernel_failures("spirv", opt, run_spirv)
    assert not failures, "\n".join(failures[:3])
