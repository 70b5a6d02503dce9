"""`schedule: auto` on a workgroup-scope tensor_matmul (docs/reference/gemm.md "Automatic
schedule", wgmma.auto_pred/_lower_auto): both sm_90a pipelines in one kernel behind one
uniform branch on the documented rule (A's and B's base addresses and row pitches
multiples of 128 bytes: ping-pong; else cooperative), a constant misaligned pitch that
leaves only the cooperative pipeline, the launch's shared memory (the larger ring), ptxas
resources (no spills at the 168-register entry cap), the --explain line, and the split
loop elsewhere. Both branches run on the CPU pipeline simulator in
test_wgmma_pipeline_sim.py; the H200 checks are bench/gemm.py --check-auto."""
from __future__ import annotations

import re

import pytest

from bench.fp8_kernels import fp8_source
from bench.wgmma_kernels import gemm_source
from toolchain.compiler.ir.tensor import TensorDesc
from toolchain.compiler.targets.ptx.tensor import wgmma, wgmma_fp8

from .kernels import compile_ptx
from .test_wgmma import assert_entry_cap
from .test_wgmma_persistent import _between
from .test_wgmma_pingpong import explain


def _desc(bn: int = 256, schedule: str = "auto", fmt: str = "f16") -> TensorDesc:
    return TensorDesc(128, bn, 64, fmt, fmt, "f32", "f32", b_layout="col",
                      scope="workgroup", persistent=8, schedule=schedule)


@pytest.mark.parametrize("bn", wgmma.SHAPES_N)
def test_shared_bytes_are_the_larger_ring(bn):
    """auto's launch gives the larger of its pipelines' needs; a width of no ping-pong
    halves (232) holds the cooperative pipeline alone, and needs only its bytes."""
    forms = ("pingpong", "cooperative") if bn % 16 == 0 else ("cooperative",)
    assert wgmma.halves(_desc(bn)) == (bn % 16 == 0)
    both = [wgmma.shared_bytes(_desc(bn, s)) for s in forms]
    assert wgmma.shared_bytes(_desc(bn)) == max(both) <= wgmma.SMEM_LIMIT
    assert wgmma.threads(_desc(bn)) == 384


@pytest.mark.parametrize("src,tag", [
    (gemm_source("f16", persistent=True, schedule="auto"), "wg"),
    (gemm_source("bf16", out="bf16", persistent=False, schedule="auto"), "wg"),
    (fp8_source(persistent=True, schedule="auto"), "wgf8"),
])
def test_both_pipelines_behind_one_uniform_branch(src, tag):
    text = compile_ptx(src, "sm_90a")
    branch = re.search(rf"@!(%p\d+) bra\.uni (\$L__{tag}_auto_coop\d+);", text)
    assert branch, "no uniform branch to the cooperative pipeline"
    pp_at = text.index(f"$L__{tag}_pp_cons")
    coop_at = text.index(branch.group(2) + ":")
    assert text.index(branch.group(0)) < pp_at < coop_at       # ping-pong first
    coop = text[coop_at:]
    assert "_pp_" not in coop and f"$L__{tag}_cons" in coop
    # the rule: base & 127 and pitch & (128 / element bytes - 1) of A and B, ANDed
    head = text[:text.index(branch.group(0))]
    mask = 128 // (1 if tag == "wgf8" else 2) - 1
    assert len(re.findall(r"and\.b32 %r\d+, %r\d+, 127;", head)) >= 2
    assert len(re.findall(rf"and\.b32 %r\d+, %r\d+, {mask};", head)) >= 2
    # each pipeline its own barriers: ping-pong's P + P + 2 turns, cooperative's 2 x S
    S, P = (wgmma.stages(_desc(schedule=s)) for s in ("cooperative", "pingpong"))
    assert text.count("mbarrier.inval") == 2 * P + 2 + 2 * S
    assert text.count("setmaxnreg.inc.sync.aligned.u32 232") == 2
    assert ".maxntid 384, 1, 1" in text and "reqnctapercluster" not in text
    # the launch must give the larger ring: the native predicate asks for it; each
    # pipeline stores D through the copy engine when the launch also holds its boxes
    fmt = "e4m3" if tag == "wgf8" else "f16"
    need = wgmma.ring_bytes(_desc(schedule="auto", fmt=fmt))
    assert re.search(rf"setp\.ge\.and\.u32 %p\d+, %r\d+, {need}, %p\d+;", text) or \
        re.search(rf"setp\.ge\.u32 %p\d+, %r\d+, {need};", text)
    for schedule in ("pingpong", "cooperative"):
        boxes = wgmma.shared_bytes(_desc(schedule=schedule, fmt=fmt))
        assert re.search(rf"setp\.ge\.u32 %p\d+, %r\d+, {boxes};", text), schedule


def test_a_constant_misaligned_pitch_keeps_only_the_cooperative_pipeline():
    src = gemm_source("f16", persistent=True, schedule="auto").replace(
        "lda: lda, ldb: ldb", "lda: 4104, ldb: ldb")
    text = compile_ptx(src, "sm_90a")
    assert "_pp_" not in text and "_auto_coop" not in text
    assert "$L__wg_cons" in text
    aligned = compile_ptx(gemm_source("f16", persistent=True, schedule="auto").replace(
        "lda: lda, ldb: ldb", "lda: 4096, ldb: ldb"), "sm_90a")
    assert "_pp_" in aligned and "_auto_coop" in aligned       # B's pitch still decides


@pytest.mark.parametrize("src", [
    gemm_source("f16", persistent=True, schedule="auto"),
    gemm_source("bf16", out="bf16", persistent=True, schedule="auto"),
    gemm_source("f16", out="f16", persistent=False, schedule="auto"),
    gemm_source("f16", out="f16", epilogue="col_bias_relu", persistent=True,
                schedule="auto"),
    gemm_source("bf16", out="f32", epilogue="matrix_bias_col", persistent=True,
                schedule="auto"),
    fp8_source(out="bf16", persistent=True, schedule="auto"),
    fp8_source(out="f32", epilogue="matrix_bias", persistent=True, schedule="auto"),
], ids=["f16-f32", "bf16-bf16", "f16-f16-region", "f16-epi", "bf16-matrix", "fp8-bf16",
        "fp8-f32-matrix"])
def test_no_spills_at_the_entry_cap(ptxas_path, src):
    assert_entry_cap(ptxas_path, compile_ptx(src, "sm_90a"))


@pytest.mark.parametrize("arch", ["sm_121a", "sm_90", "portable"])
def test_other_profiles_loop_over_split_regions(ptxas, arch):
    text = compile_ptx(gemm_source("f16", persistent=True, schedule="auto"), arch)
    assert "wgmma" not in text and "cp.async.bulk" not in text
    ptxas(text, {"portable": "sm_75"}.get(arch, arch))


@pytest.mark.parametrize("arch,src,says", [
    ("sm_90a", gemm_source("f16", persistent=True, schedule="auto"),
     "automatic schedule: the ping-pong pipeline (each consumer warpgroup computes its own "
     "128x128 half of every tile) when A's and B's base addresses and row pitches are all "
     "multiples of 128 bytes, else the cooperative one"),
    ("sm_121a", gemm_source("f16", persistent=True, schedule="auto"),
     "`schedule: auto` has no effect without the pipeline"),
    ("sm_90a", fp8_source(persistent=True, schedule="auto"), "automatic schedule"),
])
def test_explain_line(tmp_path, arch, src, says):
    assert says in explain(tmp_path, arch, src)


def test_fp8_launch_sizes_follow():
    d = _desc(fmt="e4m3")
    assert wgmma_fp8.shared_bytes(d) == max(
        wgmma.shared_bytes(_desc(schedule=s, fmt="e4m3")) for s in ("pingpong", "cooperative"))


def test_documented_rule_is_the_compilers():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "gemm.md").read_text()
    section = _between(doc, "## Automatic schedule", "\n## ")
    assert f"multiples of {wgmma.AUTO_ALIGN} bytes" in section
    assert f"shared {wgmma.shared_bytes(_desc())}" in section


# the IR round trip of schedule=auto: test_wgmma_pingpong.test_ir_round_trip_keeps_the_schedule


def test_a_bad_word_lists_auto():
    from toolchain.compiler.diagnostics import CompileError
    src = gemm_source("f16", persistent=True, schedule="auto").replace("schedule: auto",
                                                                       "schedule: best")
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0340" and "must be one of cooperative, pingpong, auto" in d.message, d
    assert d.span is not None


def _store_says(bn: int, out: str, schedule: str) -> str:
    desc = TensorDesc(128, bn, 64, "f16", "f16", "f32", out, b_layout="col",
                      scope="workgroup", persistent=8, schedule=schedule)
    return (f"the launch gives {wgmma.shared_bytes(desc)} bytes of dynamic shared memory, "
            f"else from the registers (the pipeline itself needs {wgmma.ring_bytes(desc)})")


@pytest.mark.parametrize("bn,out,schedule,says,not_says", [
    (256, "f16", "auto", _store_says(256, "f16", "auto"), "ping-pong branch stores"),
    (192, "f16", "auto", "; the last box of a 96-column epilogue is clipped at that width "
     "by a second, rank-3 map of D", "branch stores from the registers"),
    (240, "f32", "auto", "; the last box of a 120 or 240-column epilogue is clipped", None),
    (192, "f16", "pingpong", _store_says(192, "f16", "pingpong"), None),
    (256, "f32", "cooperative", _store_says(256, "f32", "cooperative"), "clipped"),
])
def test_explain_says_how_d_is_stored(tmp_path, bn, out, schedule, says, not_says):
    """The launch size the store path's run-time test asks for, and the ring's, or why D
    is stored from the registers."""
    text = explain(tmp_path, "sm_90a", gemm_source("f16", bn=bn, out=out, persistent=True,
                                                   schedule=schedule))
    assert says in text
    assert not_says is None or not_says not in text


@pytest.mark.parametrize("bn,out,schedule,says", [
    (192, "f16", "auto", "; its ping-pong branch stores from the registers"),
    (192, "f16", "pingpong", "D stored from the registers (a 96-column epilogue holds no "
     "whole 128-byte box)"),
])
def test_explain_without_clipped_boxes(tmp_path, monkeypatch, bn, out, schedule, says):
    """wgmma.CLIPPED_STORE off: an epilogue of no whole number of boxes stores from the
    registers, and --explain says why."""
    monkeypatch.setattr(wgmma, "CLIPPED_STORE", False)
    text = explain(tmp_path, "sm_90a", gemm_source("f16", bn=bn, out=out, persistent=True,
                                                   schedule=schedule))
    assert says in text and "clipped" not in text


def test_explain_says_d_from_the_registers_when_the_switch_is_off(tmp_path, monkeypatch):
    monkeypatch.setattr(wgmma, "TMA_STORE", False)
    text = explain(tmp_path, "sm_90a", gemm_source("f16", persistent=True, schedule="auto"))
    assert "; D stored from the registers" in text and "copy engine" not in text


def test_explain_fp8_says_how_d_is_stored(tmp_path):
    text = explain(tmp_path, "sm_90a", fp8_source(persistent=True, schedule="auto"))
    assert "D stored through shared memory by the copy engine" in text


@pytest.mark.parametrize("ahead", [1, 0])
def test_explain_says_c_is_loaded_ahead_only_when_it_is(tmp_path, monkeypatch, ahead):
    monkeypatch.setattr(wgmma, "STORE_C_AHEAD", ahead)
    text = explain(tmp_path, "sm_90a", gemm_source("f16", persistent=True, schedule="auto"))
    assert "D stored through shared memory by the copy engine" in text
    assert ("the next box's C loaded before this box's sums" in text) == bool(ahead)


@pytest.mark.parametrize("out,schedule,cluster", [("f32", "auto", 2), ("bf16", "auto", 1),
                                                  ("f16", "cooperative", 2)])
def test_width_232_is_cooperative_and_fits(ptxas_path, out, schedule, cluster):
    """m128n232k64 (13 tiles across N = 3000, 8 columns narrower than 240): one wgmma
    width, no ping-pong half (116 is no wgmma width), so auto holds the cooperative
    pipeline alone; paired, the B box arrives as 120 and 112 rows, each a rank's map; within
    the entry cap, FP8's too."""
    text = compile_ptx(gemm_source("f16", bn=232, out=out, persistent=True,
                                   schedule=schedule, cluster=cluster), "sm_90a")
    assert "m64n232k16" in text and "m64n116k16" not in text
    assert text.count("wgmma.fence") == 1                     # one consumer: no ping-pong
    if cluster == 2:
        assert re.search(r"selp\.u32 %r\d+, 112, 120, %p\d+", text)    # rank 1: 112 rows
    assert_entry_cap(ptxas_path, text)
    fp8 = compile_ptx(fp8_source(out="bf16", bn=232, persistent=True, schedule=schedule),
                      "sm_90a")
    assert "m64n232k32" in fp8
    assert_entry_cap(ptxas_path, fp8)


def test_width_232_pingpong_says_why_it_splits(tmp_path):
    """`schedule: pingpong` at 232 has no pipeline: --explain says why, and the kernel is
    the split regions alone (exact on every profile)."""
    src = gemm_source("f16", bn=232, persistent=True, schedule="pingpong")
    text = explain(tmp_path, "sm_90a", src)
    assert "half tiles of a 232-column tile would be 116 columns, no wgmma width" in text
    assert "wgmma.mma_async" not in compile_ptx(src, "sm_90a")
    says = explain(tmp_path, "sm_90a", gemm_source("f16", bn=232, persistent=True,
                                                   schedule="auto"))
    assert "automatic schedule: the cooperative pipeline alone" in says
