"""Block-scaled (mxf8f6f4 / MXFP4 / NVFP4) tensor_matmul regions on PTX 8.8 sm_121a:
sm_121a assembly + CPU oracle only (no hardware here). ptxas -arch=sm_121a proves syntax
and a zero-spill, zero-stack register budget; the CPU PTX interpreter (ptx_sim.py) runs
the generated replay (LSB-first gathers, integer minifloat/scale decoding, block-scale
reloads, 64-bit addressing, partial warps, tails) against tests/support/tensor_oracle.py
bit for bit. Inputs are exactly representable so every result is exact in f32.
"""
from __future__ import annotations

import pytest

from . import narrow_cases as NC
from .kernels import compile_ptx
from .test_fp8_sparse_scaled import _scaled_src, ptxas_usage, refusal, simulate

MX32 = ("block32", "ue8m0")
NV16 = ("block16", "ue4m3")
FORMATS = ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")


def _case(at, bt, shape, scale, *dims, **kw) -> NC.Case:
    return NC.scaled_matmul(at, bt, shape, *scale, *dims, **kw)


ASSEMBLY = [
    (("e4m3", "e5m2", "m16n8k32", MX32), {}),
    (("e3m2", "e2m3", "m16n16k32", MX32), dict(transpose=(True, False))),
    (("e2m1", "e2m1", "m16n8k64", MX32), dict(transpose=(False, True))),
    (("e2m1", "e2m1", "m32n16k64", NV16), dict(layouts=("col", "row", "col", "row"))),
    (("e2m1", "e4m3", "m16n8k32", MX32), dict(packed_scales=True)),
]
ASSEMBLY_IDS = ["mx-fp8", "mx-fp6-transA", "mxfp4-transB", "nvfp4-layouts",
                "mx-fp4xfp8-packed-scales"]


@pytest.mark.parametrize("args,kw", ASSEMBLY, ids=ASSEMBLY_IDS)
def test_scaled_region_sm121a_assembly_zero_spills_no_hardware(ptxas_path, args, kw):
    at, bt, shape, scale = args
    text = compile_ptx(_case(at, bt, shape, scale, 19, 23, 67, **kw).source, "sm_121a")
    assert ".target sm_121a" in text and "fma.rn.f32" in text
    # integer decoding only: no narrow-format conversion instruction is emitted
    assert "cvt.rn.f16x2" not in text and "e2m1x2" not in text
    usage = ptxas_usage(ptxas_path, text, "sm_121a")
    assert "0 bytes spill stores, 0 bytes spill loads" in usage
    assert "0 bytes stack frame" in usage


def test_scaled_region_sm120a_assembly_no_hardware(ptxas):
    ptxas(compile_ptx(_case("e4m3", "e4m3", "m16n8k32", MX32, 8, 8, 8).source, "sm_120a"),
          "sm_120a")


# 19x23x67: M/N/K tails in both directions, a partial last scale block (67 = 2*32 + 3 and
# 4*16 + 3), poisoned stream/scale/D padding and padded strides (pad=5 elements, so FP6
# rows start mid-byte).
@pytest.mark.parametrize("args,kw", [
    (("e3m2", "e2m1", "m16n8k32", MX32, 19, 23, 67), dict(transpose=(True, False))),
    (("e2m1", "e2m1", "m16n16k64", NV16, 19, 23, 67), dict(transpose=(True, True))),
], ids=["fp6xfp4-19x23x67-transA", "nvfp4-19x23x67-transposed"])
def test_scaled_region_tails_cpu_oracle_only_no_hardware(args, kw):
    sim = simulate(_case(*args, **kw), "sm_121a")
    assert sim.mmas == 0                   # exact replay (no native interior yet)


@pytest.mark.parametrize("at", FORMATS)
@pytest.mark.parametrize("bt", ["e5m2", "e2m3", "e2m1"])
def test_scaled_region_type_pairs_cpu_oracle_only_no_hardware(at, bt):
    simulate(_case(at, bt, "m16n8k32", MX32, 9, 11, 37, transpose=(bt == "e2m3", False),
                   layouts=("col", "row", "row", "col") if at == "e2m1" else
                   ("row", "col", "row", "col"), seed=len(at + bt)), "sm_121a")


@pytest.mark.parametrize("args,kw", [
    (("e2m1", "e2m1", "m16n8k64", MX32, 9, 10, 70), dict(block=20)),
    (("e4m3", "e2m3", "m16n8k32", MX32, 17, 5, 33), dict(block=7, warps=1)),
], ids=["mxfp4-partial-warp-20", "fp8xfp6-partial-warp-7"])
def test_scaled_region_partial_warp_cpu_oracle_only_no_hardware(args, kw):
    simulate(_case(*args, **kw), "sm_121a")


@pytest.mark.parametrize("scale", [MX32, NV16], ids=["ue8m0", "ue4m3"])
def test_scaled_region_k0_copies_c_cpu_oracle_only_no_hardware(scale):
    simulate(_case("e2m1", "e2m1", "m16n8k64", scale, 19, 10, 0), "sm_121a")


def test_scaled_region_packed_scale_default_and_warps_cpu_oracle_only_no_hardware():
    simulate(_case("e5m2", "e3m2", "m16n8k32", MX32, 17, 18, 40, packed_scales=True,
                   warps=2, transpose=(False, True)), "sm_121a")


SRC = NC.scaled_matmul("e2m1", "e2m1", "m16n8k64", "block16", "ue4m3", 16, 8, 64).source


@pytest.mark.parametrize("arch,version", [("sm_90a", None), ("sm_121", None),
                                          ("sm_120a", "8.7"),
                                          ("sm_100a", None)])
def test_scaled_region_refusals_name_ptx_8_8_and_sm120a_sm121a(arch, version):
    d = refusal(SRC, arch, version)
    assert d.code == "E0504", d.message
    assert "block-scaled tensor_matmul region (mxf4nvf4)" in d.message
    assert "PTX ISA 8.8 and target sm_120a or sm_121a" in d.message


@pytest.mark.parametrize("args,fragment", [
    (("e4m3", "f16", "m16n8k32", ("block32", "block32"), ("ue8m0", "ue8m0")), "FP8/FP6/FP4"),
    (("e4m3", "e4m3", "m16n8k32", ("block16", "block16"), ("ue4m3", "ue4m3")), "NVFP4"),
    (("e2m1", "e2m1", "m16n8k64", ("block32", "block16"), ("ue8m0", "ue4m3")), "both sides"),
], ids=["f16-input", "nvfp4-needs-e2m1", "mixed-modes"])
def test_unsupported_scaled_regions_are_refused(args, fragment):
    d = refusal(_scaled_src(*args, matmul=True), "sm_121a")
    assert d.code == "E0505" and fragment in d.message, d.message

