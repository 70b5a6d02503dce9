"""Stream-K (`workspace:` on a persistent workgroup tensor_matmul, wgmma_streamk.py,
docs/reference/gemm.md "Stream-K"): the option's diagnostics, the fixup's structure (the
partial sums stored, released and counted per warp, read back past L1), no spills at the
entry cap for every family that splits, the --explain line, other profiles ignoring the
workspace, and the IR round trip. The split itself runs on the CPU pipeline emulator
(test_wgmma_pipeline_sim.py, STREAMK_CASES) and on the H200 (bench/gemm.py
--check-streamk, tests/gpu/test_gemm_hopper.py)."""
from __future__ import annotations

import re

import pytest

from bench.fp8_kernels import fp8_source
from bench.wgmma_kernels import gemm_source
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.ptx.tensor import wgmma

from .kernels import compile_ptx
from .test_wgmma import assert_entry_cap
from .test_wgmma_pingpong import explain, located_e0340


def _src(schedule: str = "auto", **kw) -> str:
    return gemm_source("f16", persistent=True, schedule=schedule, workspace=True, **kw)


@pytest.mark.parametrize("edit,message", [
    (("persistent: 8, ", ""), "splits the last round of a persistent tile loop"),
    (("schedule: auto", "schedule: pingpong"), "not ping-pong's"),
])
def test_bad_workspace_option_is_located(edit, message):
    src = _src().replace(*edit)
    assert src != _src()
    assert message in located_e0340(src).message


def test_workspace_must_be_a_uint32_pointer():
    src = _src().replace("ws: uint32*", "ws: float32*")
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0343" and "`workspace:` must be a uint32*" in d.message, d


def test_tensor_mma_refuses_the_option():
    mma = """kernel k(a: uint16*, b: uint16*, c: float32*, d: float32*, w: uint32*) {
  tensor_mma(a, b, c, d, shape: m16n16k16, input_type: f16, output_type: f32, workspace: w);
}
"""
    with pytest.raises(CompileError) as exc:
        compile_ptx(mma, "sm_90a")
    assert "unknown option `workspace:`" in exc.value.diagnostics[0].message


@pytest.mark.parametrize("schedule", ["cooperative", "auto"])
def test_fixup_structure(schedule):
    """One fixup (the cooperative pipeline; auto's ping-pong branch does not split): a
    thread's 128 partial sums (256 columns) stored as 32 quads, a gpu-scope release and
    the warp's one counted arrival, the sums read back through L2 (32 quads of part 0,
    64 pairs of each further part, added rounded to nearest); the counter reset for the
    next launch."""
    text = compile_ptx(_src(schedule), "sm_90a")
    fix = text[text.index("sk_whole"):re.search(r"\$L__sk_summed\d+:", text).start()]
    assert len(re.findall(r"st\.global\.v4\.f32", fix)) == 32          # 256 columns / 8
    assert len(re.findall(r"ld\.global\.cg\.v4\.f32", fix)) == 32
    assert len(re.findall(r"ld\.global\.cg\.v2\.f32", fix)) == 64
    assert len(re.findall(r"add\.rn\.f32", fix)) == 128
    assert fix.count("atom.acq_rel.gpu.global.add.u32") == 1
    assert fix.count("fence.acq_rel.gpu") == 2
    assert "shfl.sync.idx.b32" in fix and "st.global.u32" in fix
    assert text.count("sk_whole") == 2                    # its label and one branch to it


def test_paired_fixup_indexes_slots_and_counters_by_rank():
    """`cluster: 2`: the same fixup, each rank's slots and counters at 2·index + rank
    (its own half tile's partial sums), the counters sized for both workgroups."""
    text = compile_ptx(_src("cooperative", cluster=2), "sm_90a")
    fix = text[text.index("sk_whole"):re.search(r"\$L__sk_summed\d+:", text).start()]
    assert "%cluster_ctarank" in fix
    assert len(re.findall(r"st\.global\.v4\.f32", fix)) == 32
    assert fix.count("atom.acq_rel.gpu.global.add.u32") == 1
    assert "multicast::cluster" in text                # B's boxes still shared


def test_without_a_workspace_nothing_changes():
    plain = compile_ptx(gemm_source("f16", persistent=True, schedule="auto"), "sm_90a")
    assert "atom.acq_rel.gpu" not in plain and "$L__sk_" not in plain


def test_explain_names_the_last_round_in_mode_2(tmp_path, monkeypatch):
    monkeypatch.setattr(wgmma, "STREAM_K", 2)
    assert "cuts the tiles of the last round along K" in explain(tmp_path, "sm_90a",
                                                                 _src("cooperative"))


def test_switched_off_the_workspace_is_unused(monkeypatch):
    monkeypatch.setattr(wgmma, "STREAM_K", 0)
    text = compile_ptx(_src(), "sm_90a")
    assert "atom.acq_rel.gpu" not in text and "$L__sk_" not in text


@pytest.mark.parametrize("src", [
    _src(),
    gemm_source("bf16", out="bf16", persistent=True, workspace=True),
    gemm_source("f16", out="f16", epilogue="col_bias_relu", persistent=True, schedule="auto",
                workspace=True),
    gemm_source("bf16", out="f32", epilogue="matrix_bias_col", persistent=True,
                schedule="auto", workspace=True),
    fp8_source(out="bf16", persistent=True, schedule="auto", workspace=True),
    fp8_source(out="f32", epilogue="matrix_bias", persistent=True, schedule="auto",
               workspace=True),
    _src(cluster=2),
    gemm_source("bf16", out="bf16", persistent=True, cluster=2, workspace=True),
    fp8_source(out="bf16", persistent=True, schedule="auto", cluster=2, workspace=True),
], ids=["f16-f32", "bf16-bf16-coop", "f16-epi", "bf16-matrix", "fp8-bf16", "fp8-f32-matrix",
        "f16-f32-cluster", "bf16-bf16-coop-cluster", "fp8-bf16-cluster"])
def test_no_spills_at_the_entry_cap(ptxas_path, src):
    assert_entry_cap(ptxas_path, compile_ptx(src, "sm_90a"))


@pytest.mark.parametrize("arch,src,says", [
    ("sm_90a", _src(), "stream-K: auto's cooperative branch cuts the tiles of a launch "
     "with fewer tiles than workgroups along K into up to 8 parts"),
    ("sm_90a", _src(), "; auto then takes that branch"),
    ("sm_90a", _src("cooperative"), "stream-K: the cooperative pipeline cuts"),
    ("sm_90a", _src(), "32·G bytes rounded up to 256, plus 262144·G"),
    ("sm_90a", _src(cluster=2), "cuts the pair tiles of a launch with fewer pair tiles "
     "than clusters along K"),
    ("sm_90a", fp8_source(persistent=True, schedule="auto", workspace=True), "stream-K"),
    ("sm_121a", _src(), "`workspace:` unused (no pipeline to split)"),
])
def test_explain_line(tmp_path, arch, src, says):
    assert says in explain(tmp_path, arch, src)


def test_other_profiles_ignore_the_workspace(ptxas):
    text = compile_ptx(_src(), "sm_90")
    assert "wgmma" not in text and "atom.acq_rel.gpu" not in text
    ptxas(text, "sm_90")


def test_ir_round_trip_keeps_the_workspace():
    from toolchain.compiler.frontend.api import compile_to_ir
    from toolchain.compiler.ir.printer import format_module
    from toolchain.compiler.ir.reader import parse_module
    module, _ = compile_to_ir("g.mettle", gpu=True, source_text=_src())
    text = format_module(module)
    assert "workspace" in text
    assert format_module(parse_module(text)) == text
