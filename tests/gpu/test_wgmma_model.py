"""Hardware: the hand-written wgmma kernels of tests/tensor/test_wgfrag_sim.py on an sm_90a
GPU, checking the CPU model (tests/tensor/wgfrag_sim.py, wgmma_desc.py) against silicon:
every descriptor layout, both A forms, scale-d and imm-scale give numpy's product, as the
model says. (A B tile off the swizzle repeat with the ISA's base offset did not read the
absolute-address pattern on the H200, so the model refuses such descriptors:
tests/gpu/wgmma_base_offset.py records what silicon reads there.)"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.tensor import test_wgfrag_sim as M
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

def _model_cases():
    """The model test's cases (its parametrize list, not restated here)."""
    mark = next(m for m in M.test_wgmma_matches_numpy.pytestmark if m.name == "parametrize")
    return mark.args[1]


def cells(args) -> list:
    """The harness's launch cells for build_case's (kind, name, value) arguments."""
    out = []
    for kind, name, value in args:
        if kind == "buf":
            out.append(Buffer(name, str(value.dtype), data=value, output=name == "dio"))
        else:
            out.append(Scalar({"u32": "uint32", "u64": "uint64"}[kind], int(value)))
    return out


def _gpu(gpu_run, text, args, n):
    arch = detect_local_arch()
    if arch != "sm_90a":
        pytest.skip(f"wgmma needs sm_90a, this GPU is {arch}")
    return gpu_run(text, "k", grid=1, block=128, args=cells(args), shared=0)["dio"]


@pytest.mark.parametrize("case", _model_cases())
def test_the_model_cases_on_silicon(gpu_run, case):
    n, fmt, rs, b, a, scale_d, sa, sb, ksteps = case
    text, args, want, decode = M.build_case(n, fmt, rs, b, a or (1, False), scale_d, sa, sb,
                                            ksteps)
    got = decode(_gpu(gpu_run, text, args, n))
    assert np.array_equal(got, want)
