"""256-row tiles of the sm_90a workgroup GEMM (`shape: m256nNk64`, docs/reference/gemm.md
"Tall tiles"): the consumer's two 64-row blocks per K step against one B stage, the ring
they get, ptxas resources, and the schedules that keep 128-row tiles, with their
--explain reasons. Exactness on the pipeline emulator is in test_wgmma_pipeline_sim.py
(test_tall_tiles_exact)."""
from __future__ import annotations

import re

import pytest

from bench.wgmma_kernels import EPILOGUES, gemm_source
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.ir.tensor import TensorDesc
from toolchain.compiler.targets.ptx.tensor import wgmma

from .kernels import compile_ptx
from .test_wgmma import _usage, assert_entry_cap


def _desc(n: int = 160, out: str = "f32", m: int = 256, **kw) -> TensorDesc:
    return TensorDesc(m, n, 64, "f16", "f16", "f32", out, b_layout="col", scope="workgroup",
                      **kw)


def _consumer_loop(text: str) -> str:
    start = re.search(r"^(\$L__wg_cons\d+):", text, re.M)
    return text[start.end():text.index(f"bra.uni {start.group(1)};")]


def test_two_blocks_per_consumer_on_one_b_stage():
    """Per K step each consumer issues two m64n160k16 with A descriptors 64 rows (8 KiB,
    512 in the descriptor's 16-byte units) apart and the same B descriptor; the second
    consumer's A rows start 128 rows (16 KiB) into the stage."""
    text = compile_ptx(gemm_source("f16", bm=256, bn=160, persistent=True), "sm_90a")
    loop = _consumer_loop(text)
    mmas = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n160k16\.f32\.f16\.f16 "
                      r"\{[^}]*\}, (%rd\d+), (%rd\d+),", loop)
    assert len(mmas) == 8, loop                 # 4 k16 steps x 2 blocks
    for (a0, b0), (a1, b1) in zip(mmas[::2], mmas[1::2]):
        assert b0 == b1 and a0 != a1
        assert re.search(rf"add\.s64 {re.escape(a1)}, {re.escape(a0)}, 512;", loop)
    assert re.search(r"mad\.lo\.u32 %r\d+, %r\d+, 16384, %r\d+;", text)
    assert ".maxntid 384, 1, 1" in text


@pytest.mark.parametrize("n,out,stages,boxes", [(160, "f32", 4, 1), (160, "f16", 4, 1),
                                                (128, "f32", 4, 2), (64, "f16", 4, 2)])
def test_ring_and_store_boxes(n, out, stages, boxes):
    """A 52 KiB stage (256 + 160 rows of 128 bytes): one D store box a warp keeps the ring
    at 4 stages, where two would leave 3 (wgmma.MIN_STAGES)."""
    d = _desc(n, out)
    assert wgmma.supported(d) and wgmma.tall(d) and wgmma.blocks(d) == 2
    assert (wgmma.stages(d), wgmma.store_buffers(d)) == (stages, boxes)
    assert wgmma.shared_bytes(d) <= wgmma.SMEM_LIMIT - wgmma.PAIR_STATIC_BYTES


def test_widths_beyond_the_registers_split():
    """n accumulators a thread: from 192 up ptxas spills in the consumers' 232 registers."""
    assert not wgmma.supported(_desc(192)) and not wgmma.supported(_desc(256))
    assert not wgmma.supported(_desc(160, m=128))          # 160 is a tall width only


@pytest.mark.parametrize("out", ["f32", "f16", "bf16"])
def test_no_spills_at_the_entry_cap(ptxas_path, out):
    fmt = "bf16" if out == "bf16" else "f16"
    for persistent in (False, True):
        assert_entry_cap(ptxas_path, compile_ptx(gemm_source(fmt, bm=256, bn=160, out=out,
                                                             persistent=persistent),
                                                 "sm_90a"))


@pytest.mark.parametrize("epilogue", sorted(EPILOGUES))
def test_fused_epilogues_no_spills(ptxas_path, epilogue):
    """Every fused epilogue at 256x160 with an f32 D fits without spills (smaller batches:
    wgmma.epilogue_batch); with a 16-bit D only the column-major bias matrix spills."""
    for out in ("f32", "f16"):
        src = gemm_source("f16", bm=256, bn=160, out=out, epilogue=epilogue, persistent=True)
        usage = _usage(ptxas_path, compile_ptx(src, "sm_90a"), "sm_90a")
        assert "warning" not in usage.lower(), usage
        if not (epilogue == "matrix_bias_col" and out == "f16"):
            assert "0 bytes spill stores" in usage, (out, usage)


def _explain(tmp_path, src: str) -> str:
    path = tmp_path / "g.mettle"
    path.write_text(src)
    res = compile_file(str(path), Options(emit="ptx", gpu_arch="sm_90a", explain=True),
                       source_text=src)
    return res.explain


@pytest.mark.parametrize("schedule,cluster,says", [
    (None, 1, "persistent pipeline"),
    ("auto", 1, "persistent pipeline"),
    ("pingpong", 1, "a 256-row tile runs the cooperative schedule unpaired"),
    (None, 2, "a 256-row tile runs the cooperative schedule unpaired"),
])
def test_schedules_and_explain(tmp_path, schedule, cluster, says):
    """`auto` holds the cooperative pipeline alone (no ping-pong branch); ping-pong and
    clusters of 2 take the split path with the reason."""
    src = gemm_source("f16", bm=256, bn=160, persistent=True, schedule=schedule,
                      cluster=cluster)
    assert says in _explain(tmp_path, src)
    if schedule == "auto":
        text = compile_ptx(src, "sm_90a")
        assert wgmma.forms(_desc(schedule="auto")) == (_desc(schedule="cooperative"),)
        assert len(re.findall(r"^\$L__wg_cons\d+:", text, re.M)) == 1


def test_a_workspace_is_left_unused(tmp_path):
    """Stream-K splits 128-row tiles only: a tall tile's `workspace:` is unused, and the
    explanation says so."""
    src = gemm_source("f16", bm=256, bn=160, persistent=True, workspace=True)
    explain = _explain(tmp_path, src)
    assert "`workspace:` unused (stream-K splits 128-row tiles only)" in explain
    assert "persistent pipeline" in explain
