"""Block-scaled (mxf8f6f4 / MXFP4 / NVFP4) tensor_matmul regions on PTX 8.8 sm_121a:
sm_121a assembly + CPU oracle only (no hardware here). ptxas -arch=sm_121a proves syntax
and a zero-spill, zero-stack register budget; the CPU PTX interpreter (ptx_sim.py) runs
the generated replay (LSB-first gathers, integer minifloat/scale decoding, block-scale
reloads, 64-bit addressing, partial warps, tails) against tests/support/tensor_oracle.py
bit for bit. Inputs are exactly representable so every result is exact in f32.
"""
from __future__ import annotations

import pytest

from tests.support.filecheck import filecheck

from . import narrow_cases as NC
from .kernels import compile_ptx
from .ptx_sim import Sim
from .snippets import SnippetEmitter
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
    (("e2m3", "e2m1", "m8n8k32", MX32), {}),
]
ASSEMBLY_IDS = ["mx-fp8", "mx-fp6-transA", "mxfp4-transB", "nvfp4-layouts",
                "mx-fp4xfp8-packed-scales", "replay-only-m8n8"]
KIND = {("e2m1", "e2m1", MX32): ("mxf4", 64, "2X"), ("e2m1", "e2m1", NV16): ("mxf4nvf4", 64,
                                                                             "4X")}


@pytest.mark.parametrize("args,kw", ASSEMBLY, ids=ASSEMBLY_IDS)
def test_scaled_region_sm121a_assembly_zero_spills_no_hardware(ptxas_path, args, kw):
    at, bt, shape, scale = args
    text = compile_ptx(_case(at, bt, shape, scale, 19, 23, 67, **kw).source, "sm_121a")
    assert ".target sm_121a" in text and "fma.rn.f32" in text
    # integer decoding only: no narrow-format conversion instruction is emitted
    assert "cvt.rn.f16x2" not in text and "e2m1x2" not in text
    kind, k, vec = KIND.get((at, bt, scale), ("mxf8f6f4", 32, "1X"))
    if shape.startswith("m8"):                 # not an m16n8 grid: replay only
        assert "mma.sync" not in text and "$L__tsc_replay" in text
    else:
        filecheck(text, "CHECK: @!%p{{[0-9]+}} bra.uni $L__tsc_replay\n"
                  "CHECK: $L__tsc_chunk{{[0-9]+}}:\n"
                  f"CHECK: mma.sync.aligned.m16n8k{k}.row.col.kind::{kind}.block_scale."
                  f"scale_vec::{vec}.f32.{at}.{bt}.f32.{scale[1]}\n"
                  "CHECK: @%p{{[0-9]+}} bra.uni $L__tsc_chunk\nCHECK: st.global.f32\n"
                  "CHECK: bar.warp.sync -1\nCHECK: $L__tsc_k\nCHECK: fma.rn.f32\n"
                  "CHECK: $L__tsc_replay{{[0-9]+}}:\nCHECK: $L__tsc_end{{[0-9]+}}:\n"
                  "CHECK-NEXT: activemask.b32\nCHECK-NEXT: bar.warp.sync")
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
    assert sim.mmas > 0                    # the in-range regions run natively


# Complete regions: resident native chunks (runtime K loop, both scale grids advanced per
# chunk), then the K remainder replayed from the stored D, mid-byte FP6/FP4 origins.
@pytest.mark.parametrize("args,kw", [
    (("e4m3", "e5m2", "m16n8k32", MX32, 32, 16, 100), {}),
    (("e2m3", "e3m2", "m16n8k32", MX32, 16, 24, 96), dict(transpose=(True, True), pad=3)),
    (("e2m1", "e2m1", "m16n8k64", MX32, 32, 8, 150), dict(transpose=(False, True))),
    (("e2m1", "e2m1", "m32n16k64", NV16, 32, 32, 140),
     dict(layouts=("col", "row", "col", "row"), warps=2)),
], ids=["mx-fp8-k100", "mx-fp6-transposed-k96", "mxfp4-k150", "nvfp4-grid-k140"])
def test_scaled_region_native_interior_cpu_oracle_only_no_hardware(args, kw):
    sim = simulate(_case(*args, **kw), "sm_121a")
    assert sim.mmas > 0


@pytest.mark.parametrize("at", FORMATS)
@pytest.mark.parametrize("bt", ["e5m2", "e2m3", "e2m1"])
def test_scaled_region_type_pairs_cpu_oracle_only_no_hardware(at, bt):
    simulate(_case(at, bt, "m16n8k32", MX32, 9, 11, 37, transpose=(bt == "e2m3", False),
                   layouts=("col", "row", "row", "col") if at == "e2m1" else
                   ("row", "col", "row", "col"), seed=len(at + bt)), "sm_121a")


@pytest.mark.parametrize("args,kw", [
    (("e2m1", "e2m1", "m16n8k64", MX32, 16, 8, 70), dict(block=20)),
    (("e4m3", "e2m3", "m16n8k32", MX32, 17, 5, 33), dict(block=7, warps=1)),
], ids=["mxfp4-partial-warp-20", "fp8xfp6-partial-warp-7"])
def test_scaled_region_partial_warp_cpu_oracle_only_no_hardware(args, kw):
    assert simulate(_case(*args, **kw), "sm_121a").mmas == 0     # forced exact replay


@pytest.mark.parametrize("scale", [MX32, NV16], ids=["ue8m0", "ue4m3"])
def test_scaled_region_k0_copies_c_cpu_oracle_only_no_hardware(scale):
    simulate(_case("e2m1", "e2m1", "m16n8k64", scale, 19, 10, 0), "sm_121a")


def test_scaled_region_packed_scale_strides_and_warps_cpu_oracle_only_no_hardware():
    simulate(_case("e5m2", "e3m2", "m16n8k32", MX32, 17, 18, 40, packed_scales=True,
                   warps=2, transpose=(False, True)), "sm_121a")


SRC = NC.scaled_matmul("e2m1", "e2m1", "m16n8k64", "block16", "ue4m3", 16, 8, 64).source


@pytest.mark.parametrize("arch,version", [("sm_90a", None), ("sm_121", None),
                                          ("sm_120a", "8.7"), ("sm_100a", None),
                                          ("portable", None)])
def test_scaled_regions_replay_without_the_native_family(ptxas, arch, version):
    """Without PTX 8.8 sm_120a/sm_121a a block-scaled region is the exact replay alone
    (integer decoding only), not a refusal."""
    ptx = compile_ptx(SRC, arch, version)
    ptxas(ptx, {"portable": "sm_75"}.get(arch, arch))
    assert "mma.sync" not in ptx and "kind::" not in ptx


@pytest.mark.parametrize("scale", [MX32, NV16], ids=["ue8m0", "ue4m3"])
def test_scaled_region_replay_on_sm90a_cpu_oracle(scale):
    at, shape = ("e4m3", "m16n8k32") if scale == MX32 else ("e2m1", "m16n8k64")
    case = _case(at, "e2m1", shape, scale, 21, 13, 75, transpose=(False, True), warps=2)
    assert simulate(case, "sm_90a").mmas == 0


def test_scaled_region_replay_needs_sm70():
    d = refusal(SRC, "sm_60")
    assert d.code == "E0504" and "replay of a block-scaled region" in d.message


@pytest.mark.parametrize("args,fragment", [
    (("e4m3", "f16", "m16n8k32", ("block32", "block32"), ("ue8m0", "ue8m0")), "FP8/FP6/FP4"),
    (("e4m3", "e4m3", "m16n8k32", ("block16", "block16"), ("ue4m3", "ue4m3")), "NVFP4"),
    (("e2m1", "e2m1", "m16n8k64", ("block32", "block16"), ("ue8m0", "ue4m3")), "both sides"),
], ids=["f16-input", "nvfp4-needs-e2m1", "mixed-modes"])
def test_unsupported_scaled_regions_are_refused(args, fragment):
    d = refusal(_scaled_src(*args, matmul=True), "sm_121a")
    assert d.code == "E0505" and fragment in d.message, d.message


@pytest.mark.parametrize("fmt", [*FORMATS, "ue8m0", "ue4m3"])
def test_integer_decoder_matches_oracle_for_every_code_cpu_only(fmt):
    import numpy as np

    from tests.support import tensor_oracle as O
    from toolchain.compiler.targets.ptx.tensor.scaled_matmul import decode
    em = SnippetEmitter()
    out = decode(em, fmt, "%r1")
    ptx = "\n".join([".visible .entry dec(.param .u64 pout)", "{",
                     "ld.param.u64 %rd1, [pout];", "mov.u32 %r1, %tid.x;",
                     *em.lines, "cvt.u64.u32 %rd2, %r1;", "shl.b64 %rd2, %rd2, 2;",
                     "add.s64 %rd2, %rd1, %rd2;", f"st.global.f32 [%rd2], {out};", "ret;",
                     "}"])
    codes = 1 << O.BITS[fmt]
    got = Sim(ptx, "dec").run(1, codes, [("buf", "out", np.zeros(codes, np.float32))]) \
        .read("out")
    want = np.array([O.decode(fmt, c) for c in range(codes)], dtype=np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))
