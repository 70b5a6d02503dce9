"""Unscaled FP8 tensor operations on profiles without FP8 mma.sync (below PTX 8.4 /
sm_89): exact cooperative replay instead of a refusal, with an integer FP8 decoder where
the profile also lacks the FP8 conversion instruction (PTX 7.8 / sm_89).

Checked: the integer decoder against the oracle for all 256 codes of both formats; tiles
and regions assembled by ptxas (portable as sm_75, sm_80) and run on the CPU interpreter
against the oracle (poisoned padding untouched); the refusals that remain.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.support import tensor_oracle as O
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.ptx.tensor.fp8 import _decode_int

from . import narrow_cases as NC
from .kernels import compile_ptx
from .ptx_sim import Sim
from .snippets import SnippetEmitter


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_integer_fp8_decoder_matches_oracle_for_every_code(fmt):
    em = SnippetEmitter()
    out = _decode_int(em, fmt, ".global", "%rd3")
    ptx = "\n".join([".visible .entry dec(.param .u64 pin, .param .u64 pout)", "{",
                     "ld.param.u64 %rd1, [pin];", "ld.param.u64 %rd4, [pout];",
                     "mov.u32 %r1, %tid.x;", "cvt.u64.u32 %rd2, %r1;",
                     "add.s64 %rd3, %rd1, %rd2;", *em.lines, "shl.b64 %rd2, %rd2, 2;",
                     "add.s64 %rd2, %rd4, %rd2;", f"st.global.f32 [%rd2], {out};", "ret;",
                     "}"])
    codes = np.arange(256, dtype=np.uint8)
    got = Sim(ptx, "dec").run(1, 256, [("buf", "in", codes),
                                       ("buf", "out", np.zeros(256, np.float32))]).read("out")
    want = np.array([O.decode(fmt, c) for c in range(256)], dtype=np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    # bit patterns: signed zeros and every subnormal exactly
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))


def run(case: NC.Case, arch: str) -> Sim:
    ptx = compile_ptx(case.source, arch)
    assert "mma.sync" not in ptx and "e4m3x2" not in ptx and "e5m2x2" not in ptx
    sim = Sim(ptx, case.kernel)
    mem = sim.run(case.grid, case.block, [a[:3] if a[0] == "buf" else a for a in case.args])
    case.check({a[1]: mem.read(a[1]) for a in case.args if a[0] == "buf" and a[3]})
    return sim


@pytest.mark.parametrize("arch", ["portable", "sm_80"])
def test_fp8_tiles_replay_where_mma_sync_is_missing(ptxas, arch):
    for case in (NC.fp8_tile("e4m3", "e5m2", "m16n8k32"),
                 NC.fp8_tile("e5m2", "e4m3", "m32n16k48", transpose=(True, False)),
                 NC.fp8_tile("e4m3", "e4m3", "m16n8k16", scope="workgroup")):
        ptxas(compile_ptx(case.source, arch), "sm_75" if arch == "portable" else arch)
        assert run(case, arch).mmas == 0


def test_fp8_region_replays_on_portable(ptxas):
    case = NC.fp8_matmul("e5m2", "e4m3", "m16n8k32", 35, 29, 70, warps=2)
    ptxas(compile_ptx(case.source, "portable"), "sm_75")
    run(case, "portable")


def test_fp8_on_sm89_keeps_native_mma_sync():
    ptx = compile_ptx(NC.fp8_tile("e4m3", "e5m2", "m16n8k32").source, "sm_89")
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32" in ptx


@pytest.mark.parametrize("src,fragment", [
    # shape rules are the native family's, whatever the profile
    (NC.fp8_tile("e4m3", "e4m3", "m16n8k32").source.replace("m16n8k32", "m24n8k32"),
     "exact grids of m16n8"),
    # FP8 accumulates in f32 only, replayed or native
    (NC.fp8_tile("e4m3", "e4m3", "m16n8k32").source.replace(
        "accumulator_type: f32, result_type: f32", "accumulator_type: f16, result_type: f16"
    ).replace("c: float32*, d: float32*", "c: uint16*, d: uint16*"), "accumulates in f32"),
])
def test_fp8_refusals_that_remain_on_portable(src, fragment):
    with pytest.raises(CompileError) as info:
        compile_ptx(src, "portable")
    d = info.value.diagnostics[0]
    assert d.code == "E0505" and fragment in d.message and d.span is not None, d.message


# ---------------------------------------------------------------- 2:4 and block-scaled
@pytest.mark.parametrize("arch", ["portable", "sm_75"])
def test_sparse_tiles_and_regions_replay_below_sm80(ptxas, arch):
    """mma.sp needs PTX 7.1 / sm_80: below it structured 2:4 replays, walking the same
    clamped masks as the native path (invalid masks included)."""
    for case in (NC.sparse_tile("f16", "m16n8k16", invalid=True),
                 NC.sparse_tile("bf16", "m32n16k32", ("col", "row", "col", "row"),
                                (True, False), invalid=True),
                 NC.sparse_matmul("bf16", "m16n16k16", 19, 23, 19, pad=5, warps=2,
                                  invalid=True)):
        ptxas(compile_ptx(case.source, arch), "sm_75")
        assert "mma.sp" not in compile_ptx(case.source, arch)
        run(case, arch)


@pytest.mark.parametrize("at,bt,shape,mode,stype", [
    ("e4m3", "e2m1", "m16n8k32", "block32", "ue8m0"),
    ("e2m1", "e2m1", "m16n8k64", "block16", "ue4m3"),
    ("e3m2", "e2m3", "m32n16k64", "block32", "ue8m0"),
])
def test_scaled_tiles_replay_on_sm90a(at, bt, shape, mode, stype):
    run(NC.scaled_tile(at, bt, shape, mode, stype), "sm_90a")
