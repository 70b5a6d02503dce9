"""`schedule: pingpong` on a workgroup-scope tensor_matmul (docs/reference/gemm.md "Ping-pong
schedule", targets/ptx/tensor/wgmma_pingpong.py): the sm_90a structure (one-reader empty
barriers, two 128-arrival turn barriers, half-tile B boxes, two m64n(n/2) wgmma per K step,
the turn taken before the K loop and handed over right after it, before the drain), its
shared-memory size, ptxas resources for the 16-bit and FP8 forms (no spills at the entry
cap), the cooperative default unchanged, the split loop elsewhere, the option's
diagnostics and the --explain line. The protocol itself is model-checked in
test_wgmma_pingpong_model.py; the results on the H200 (tests/gpu)."""
from __future__ import annotations

import re
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from bench.fp8_kernels import fp8_source
from bench.wgmma_kernels import gemm_source
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.ir.tensor import TensorDesc
from toolchain.compiler.targets.ptx import ops
from toolchain.compiler.targets.ptx.tensor import wgmma, wgmma_pingpong

from .kernels import compile_ptx
from .test_wgmma_epilogue import fake_accumulators, fake_consumer, fake_pipeline_exact
from .test_wgmma import assert_entry_cap
from .test_wgmma_persistent import _between


def _desc(bn: int = 256, schedule: str = "pingpong") -> TensorDesc:
    return TensorDesc(128, bn, 64, "f16", "f16", "f32", "f32", b_layout="col",
                      scope="workgroup", persistent=8, schedule=schedule)


def test_shared_bytes_and_stages(monkeypatch):
    """D's store boxes (2 x 2 KiB per consumer warp: 32 KiB) sit after the ring, which is
    sized to leave room for them: 6 ping-pong stages for m128n256k64 (7 with
    wgmma.TMA_STORE off). ring_bytes is the native path's minimum, shared_bytes what a
    launch should give; the cooperative ring is the documented one."""
    boxes = 8 * 2 * 2048
    assert wgmma.stage_bytes(_desc()) == (128 + 128) * 128
    assert wgmma.stages(_desc()) == 6
    assert wgmma.ring_bytes(_desc()) == 1024 + 6 * 32768 + 16 * 6 + 16
    assert wgmma.shared_bytes(_desc()) == wgmma.ring_bytes(_desc()) + boxes
    assert wgmma.ring_bytes(_desc(64)) == 1024 + 7 * (160 * 128) + 16 * 7 + 16
    assert wgmma.shared_bytes(_desc(64)) == wgmma.ring_bytes(_desc(64)) + boxes
    for schedule in ("pingpong", "cooperative"):
        assert max(wgmma.shared_bytes(_desc(bn, schedule)) for bn in wgmma.SHAPES_N
                   if schedule == "cooperative" or wgmma.halves(_desc(bn))) \
            <= wgmma.SMEM_LIMIT
    for bn in wgmma.SHAPES_N:          # the cooperative sizes are the documented ones
        coop = _desc(bn, "cooperative")
        assert wgmma.ring_bytes(coop) == \
            1024 + wgmma.stages(coop) * (128 + bn) * 128 + 16 * wgmma.stages(coop)
        # a width of no whole number of boxes (240) clips its last box (clipped_map)
        assert wgmma.tma_store(coop)
        assert wgmma.shared_bytes(coop) == wgmma.ring_bytes(coop) + boxes
    monkeypatch.setattr(wgmma, "CLIPPED_STORE", False)   # the earlier form: registers
    coop = _desc(240, "cooperative")
    assert not wgmma.tma_store(coop)
    assert wgmma.shared_bytes(coop) == wgmma.ring_bytes(coop)
    assert wgmma.tma_store(_desc(256, "cooperative"))
    monkeypatch.setattr(wgmma, "TMA_STORE", False)
    assert wgmma.stages(_desc()) == 7
    assert wgmma.shared_bytes(_desc()) == wgmma.ring_bytes(_desc()) == \
        1024 + 7 * 32768 + 16 * 7 + 16


@pytest.mark.parametrize("src,tag,k_steps", [
    (gemm_source("f16", persistent=True, schedule="pingpong"), "wg", 4),
    (fp8_source(persistent=True, schedule="pingpong"), "wgf8", 4),
])
def test_structure(src, tag, k_steps):
    text = compile_ptx(src, "sm_90a")
    S = wgmma.stages(_desc())
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+(?:\+\d+)?\], (\d+);", text)
    assert inits == ["1"] * (2 * S) + ["128", "128"], inits   # full, empty: one reader
    assert text.count("mbarrier.inval") == 2 * S + 2
    assert "multicast" not in text and "reqnctapercluster" not in text
    # producer: per chunk one A box (128 rows) and one half-tile B box, 32 KiB a stage
    prod = _between(text, f"$L__{tag}_pp_prod_half", "$L__" + f"{tag}_pp_prod_tiles_done")
    assert prod.count("cp.async.bulk.tensor") == 2 and "wgmma" not in prod
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r" in prod
    assert re.search(r"expect_tx\.shared::cta\.b64 _, \[%r\d+\], 32768;", prod)
    # the B box's column moves on by n/2 between the halves
    assert re.search(r"add\.u32 %r\d+, %r\d+, 128;\n\s*add\.u32 %r\d+, %r\d+, 1;\n\s*"
                     r"setp\.lt\.u32 %p\d+, %r\d+, 2;", prod), prod[-600:]
    # consumer: the turn wait after the tile's start, before the K loop; the hand-over
    # right after the loop, before the drain; two m64n128 per K step
    tile = re.search(rf"^(\$L__{tag}_pp_cons_tile\d+):", text, re.M).group(1)
    loop = re.search(rf"^(\$L__{tag}_pp_cons\d+):", text, re.M).group(1)
    done = re.search(rf"^(\$L__{tag}_pp_cons_done\d+):", text, re.M).group(1)
    head = _between(text, tile + ":", loop + ":")
    assert head.count("mbarrier.try_wait.parity") == 1
    body = _between(text, loop + ":", done + ":")
    assert body.count("wgmma.mma_async") == 2 * k_steps
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k", body)) == 2 * k_steps
    assert body.count("wgmma.commit_group") == 1 and "wgmma.wait_group.sync.aligned 1" in body
    after = _between(text, done + ":", f"bra.uni {tile};")
    hand = after.index("mbarrier.arrive.shared::cta.b64 _, [%r")
    assert after[:hand].strip() == done + ":"                     # first thing after it
    assert not after[:hand].count("@")                             # every thread arrives
    assert hand < after.index("wgmma.wait_group.sync.aligned 0")
    # the epilogue stores both 64-row blocks of the half tile
    store = "st.global.v2.f32" if tag == "wg" else "st.global.b32"
    assert after.count(store) == 2 * 2 * 16, after.count(store)
    assert text.count("setmaxnreg.inc.sync.aligned.u32 232") == 1
    assert ".maxntid 384, 1, 1" in text


@pytest.mark.parametrize("src", [
    gemm_source("f16", persistent=True, schedule="pingpong"),
    gemm_source("bf16", out="bf16", persistent=True, schedule="pingpong"),
    gemm_source("f16", out="f16", persistent=False, schedule="pingpong"),
    gemm_source("f16", bn=128, persistent=True, schedule="pingpong"),
    gemm_source("f16", out="f16", epilogue="col_bias_relu", persistent=True,
                schedule="pingpong"),
    gemm_source("bf16", out="f32", epilogue="matrix_bias_col", persistent=True,
                schedule="pingpong"),
    fp8_source(out="bf16", persistent=True, schedule="pingpong"),
    fp8_source(out="f32", epilogue="matrix_bias", persistent=True, schedule="pingpong"),
], ids=["f16-f32", "bf16-bf16", "f16-f16-region", "f16-n128", "f16-epi", "bf16-matrix",
        "fp8-bf16", "fp8-f32-matrix"])
def test_no_spills_at_the_entry_cap(ptxas_path, src):
    assert_entry_cap(ptxas_path, compile_ptx(src, "sm_90a"))


def test_cooperative_is_the_default():
    plain = compile_ptx(gemm_source("f16", persistent=True), "sm_90a")
    named = compile_ptx(gemm_source("f16", persistent=True, schedule="cooperative"), "sm_90a")
    assert plain == named
    assert "_pp_" not in plain


@pytest.mark.parametrize("arch", ["sm_121a", "sm_90", "portable"])
def test_other_profiles_loop_over_split_regions(ptxas, arch):
    text = compile_ptx(gemm_source("f16", persistent=True, schedule="pingpong"), arch)
    assert "wgmma" not in text and "cp.async.bulk" not in text
    assert re.search(r"^\$L__wgm_split_tile\d+:", text, re.M)
    ptxas(text, {"portable": "sm_75"}.get(arch, arch))


@pytest.mark.parametrize("edit,message", [
    (("scope: workgroup", "scope: subgroup"), "needs `scope: workgroup`"),
    (("schedule: pingpong", "schedule: fast"), "must be one of cooperative, pingpong"),
    (("schedule: pingpong", "schedule: 2"), "must be one of cooperative, pingpong"),
])
def test_bad_schedule_option_is_located(edit, message):
    d = located_e0340(gemm_source("f16", persistent=False, schedule="pingpong").replace(*edit))
    assert message in d.message, d


def located_e0340(src: str):
    """The first diagnostic of compiling `src` for sm_90a: E0340, with a location."""
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0340" and d.span is not None, d
    return d


def test_subgroup_schedule_names_the_option():
    src = """kernel k(a: uint16*, b: uint16*, c: float32*, d: float32*) {
  tensor_matmul(a, b, c, d, 0, 0, 16, 16, 16, shape: m16n16k16, input_type: f16,
                output_type: f32, schedule: pingpong);
}
"""
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0340" and "`schedule: pingpong`" in d.message, d
    assert "scope: workgroup" in d.message and d.span is not None


def test_tensor_mma_has_no_schedule_option():
    src = """kernel k(a: uint16*, b: uint16*, c: float32*, d: float32*) {
  tensor_mma(a, b, c, d, shape: m16n16k16, input_type: f16, output_type: f32,
             schedule: pingpong);
}
"""
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    assert exc.value.diagnostics[0].code == "E0340"
    assert "unknown option `schedule:`" in exc.value.diagnostics[0].message


@pytest.mark.parametrize("arch,src,says", [
    ("sm_90a", gemm_source("f16", persistent=True, schedule="pingpong"),
     "ping-pong schedule: each consumer warpgroup computes its own 128x128 half"),
    ("sm_121a", gemm_source("f16", persistent=True, schedule="pingpong"),
     "`schedule: pingpong` has no effect without the pipeline"),
    ("sm_90a", fp8_source(persistent=True, schedule="pingpong"),
     "ping-pong schedule: each consumer warpgroup computes its own 128x128 half"),
])
def test_explain_line(tmp_path, arch, src, says):
    assert says in explain(tmp_path, arch, src)


def explain(tmp_path, arch: str, src: str) -> str:
    """The --explain text of compiling `src` for `arch`."""
    from toolchain.compiler.driver import Options, compile_file
    path = tmp_path / "g.mettle"
    path.write_text(src)
    return compile_file(str(path), Options(emit="ptx", gpu_arch=arch, explain=True),
                        source_text=path.read_text()).explain


# ---------------------------------------------------------------- the half tiles' epilogue
def _fake_pingpong(em, g, tid, end, share=None, fused=None, tiles=None, c_first=False):
    """The sm_90a region with its copy engine and wgmma main loop replaced (the CPU
    interpreter has neither; test_wgmma_epilogue._fake_native): consumer warpgroup h runs
    the real tile loop and the real half-tile epilogue (wgmma_pingpong.epilogue) on
    accumulators holding 3*row + column of the element each stands for, by the m64n(n/2)
    layout of row block blk of half h. `c_first` (wgmma.PINGPONG_C_FIRST's order): the
    real load_c puts C in the accumulators at the tile's start, the main loop's stand-in
    adds 3*row + column, and the real epilogue stores them without reading C again."""
    wg, lane, warp, wtid = fake_consumer(em, tid, end)
    g, close = wgmma._tile_loop(em, g, tiles, "fake")
    h, col_h = em.new("r"), em.new("r")
    half = g.desc.n // 2
    em.put(ops.binary("sub", "u32", h, wg, 1), ops.mad("lo", "u32", col_h, h, half, g.col))
    gh = replace(g, desc=replace(g.desc, n=half), col=col_h)
    acc = [[em.new("f") for _ in range(half // 2)] for _ in (0, 1)] if c_first else []
    if c_first:
        wgmma_pingpong.load_c(em, g, wtid, h, acc)
    for blk in (0, 1):
        rows = em.new("r")
        em.put(ops.mov("u32", rows, blk + 1))
        sums = fake_accumulators(em, gh, rows, lane, warp)
        if c_first:
            em.put(*(ops.binary("add", "f32", x, x, f) for x, f in zip(acc[blk], sums)))
        else:
            acc.append(sums)
    wgmma_pingpong.epilogue(em, g, wtid, h, acc, fused, wgmma.F16, None, c_in_acc=c_first)
    close()
    em.put(ops.bra(end, uniform=True))


@pytest.mark.parametrize("out,epilogue,persistent,n", [
    ("f32", None, True, 69), ("bf16", "col_bias_relu", True, 70),
    ("f32", "matrix_bias_col", False, 69), ("f16", "row_bias", True, 67)])
def test_c_in_the_accumulators_exact_on_the_interpreter(monkeypatch, out, epilogue,
                                                       persistent, n):
    """load_c then the epilogue that adds no C: every in-range element of C, the odd
    column of an odd N's last pair included, reaches D once, and nothing outside M x N
    is read into a sum or written (D's padding stays poisoned)."""
    fake_pipeline_exact(monkeypatch, partial(_fake_pingpong, c_first=True), out, epilogue,
                        persistent, "pingpong", N=n)


def test_where_the_pingpong_consumer_loads_c(monkeypatch):
    """By default the ping-pong consumer adds C in its epilogue; with
    wgmma.PINGPONG_C_FIRST (measured slower on the H200, kept for the A/B) it loads C
    (ld.global.v2.f32) between the tile's start and its turn wait and its epilogue reads
    none. The FP8 consumer (C after the scale) keeps C in its epilogue either way. The
    epilogue holds both ways of storing D (through the copy engine, from the registers),
    each with its own C loads and D stores."""
    def parts(text, tag):
        tile = re.search(rf"^(\$L__{tag}_pp_cons_tile\d+):", text, re.M).group(1)
        loop = re.search(rf"^(\$L__{tag}_pp_cons\d+):", text, re.M).group(1)
        done = re.search(rf"^(\$L__{tag}_pp_cons_done\d+):", text, re.M).group(1)
        head = _between(text, tile + ":", loop + ":")
        return head[:head.index("mbarrier.try_wait")], _between(text, done + ":",
                                                                 f"bra.uni {tile};")
    src = gemm_source("f16", out="f16", persistent=True, schedule="pingpong")
    fp8 = fp8_source(persistent=True, schedule="pingpong")
    pairs = 2 * 2 * 16                                       # blocks x halves x pairs
    assert not wgmma.PINGPONG_C_FIRST
    before, after = parts(compile_ptx(src, "sm_90a"), "wg")
    assert "ld.global" not in before and after.count("ld.global.v2.f32") == 2 * pairs
    monkeypatch.setattr(wgmma, "PINGPONG_C_FIRST", True)
    before, after = parts(compile_ptx(src, "sm_90a"), "wg")
    assert before.count("ld.global.v2.f32") == pairs
    assert "ld.global" not in after
    assert after.count("st.global.b32") == after.count("st.shared.b32") == pairs
    before, after = parts(compile_ptx(fp8, "sm_90a"), "wgf8")
    assert "ld.global" not in before and after.count("ld.global.v2.f32") == 2 * pairs


def test_c_first_keeps_every_wgmma_asynchronous(monkeypatch, ptxas_path):
    """With PINGPONG_C_FIRST the ping-pong kernels still fit the entry cap with no ptxas
    notice: load_c gives a row past M no columns instead of branching around its loads,
    since a branch there made ptxas 13.0 serialize every wgmma of the kernel (C7515)."""
    monkeypatch.setattr(wgmma, "PINGPONG_C_FIRST", True)
    for src in (gemm_source("f16", out="f16", persistent=True, schedule="pingpong"),
                gemm_source("bf16", out="f32", epilogue="matrix_bias_col", persistent=True,
                            schedule="auto")):
        assert_entry_cap(ptxas_path, compile_ptx(src, "sm_90a"))


@pytest.mark.parametrize("out,epilogue,persistent", [
    ("f32", None, True), ("bf16", "col_bias_relu", True), ("f32", "matrix_bias_col", False),
    ("f16", "row_bias", True)])
def test_half_tile_epilogue_exact_on_the_interpreter(monkeypatch, out, epilogue, persistent):
    """Both consumers' half tiles (both 64-row blocks each) cover every in-range element
    of m128n64 tiles over M x N = 150 x 70 exactly once (row and column tails: the right
    half of the last column tile is wholly outside N), C, bias and rounding included,
    against the oracle bit for bit; D's padding stays poisoned."""
    fake_pipeline_exact(monkeypatch, _fake_pingpong, out, epilogue, persistent, "pingpong")


def test_documented_table_is_the_compilers():
    """docs/reference/gemm.md's ping-pong table: stages and shared bytes per shape."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "gemm.md").read_text()
    table = _between(doc, "| shape | stages | dynamic shared bytes (`pingpong`) |", "\n\n")
    rows = re.findall(r"\| `m128n(\d+)k64` \| (\d+) \| (\d+) \|", table)
    # every width but 232, whose half tiles (116 columns) are no wgmma width
    assert sorted(int(n) for n, _, _ in rows) == [n for n in wgmma.SHAPES_N if n % 16 == 0]
    for n, stages, nbytes in rows:
        d = _desc(int(n))
        assert (wgmma.stages(d), wgmma.shared_bytes(d)) == (int(stages), int(nbytes)), n
    assert f"shared {wgmma.shared_bytes(_desc())}" in doc


@pytest.mark.parametrize("schedule", ["pingpong", "auto"])
def test_ir_round_trip_keeps_the_schedule(schedule):
    from toolchain.compiler.frontend.api import compile_to_ir
    from toolchain.compiler.ir.printer import format_module
    from toolchain.compiler.ir.reader import parse_module
    module, _ = compile_to_ir("g.mettle", gpu=True, source_text=gemm_source(
        "f16", persistent=True, schedule=schedule))
    text = format_module(module)
    assert f"persistent=8 schedule={schedule}>" in text
    assert format_module(parse_module(text)) == text
    plain, _ = compile_to_ir("g.mettle", gpu=True,
                             source_text=gemm_source("f16", persistent=True))
    assert "schedule=" not in format_module(plain)           # the default is not printed
