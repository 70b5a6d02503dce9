"""`persistent: G` on a workgroup-scope tensor_matmul (docs/reference/gemm.md "Persistent tile loop"):
the sm_90a structure (barriers and tensor maps set up once, before the tile loops; the
ring's stage and phase carried from tile to tile; one tile loop per warp role), ptxas
resources (no spills at the 168-register entry cap), the split loop on every other PTX
profile, exact on the CPU interpreter on tails with fewer workgroups than tiles and a
non-zero origin, the refusal of `persistent:` without `scope: workgroup` (SPIR-V's: in
tests/spirv_emit) and the --explain line."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.support import tensor_oracle as O
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.ptx.tensor import wgmma

from .kernels import compile_ptx
from .ptx_sim import Sim
from .test_defaults import LAYOUTS, operands, ptx_of
from .test_wgmma import _usage, assert_entry_cap
from bench.wgmma_kernels import gemm_source


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start):text.index(end, text.index(start))]


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_setup_once_and_ring_state_carried(fmt):
    text = compile_ptx(gemm_source(fmt, persistent=True), "sm_90a")
    desc_stages = wgmma.stages(wgmma_desc(fmt))
    prod_tile = re.search(r"^(\$L__wg_prod_tile\d+):", text, re.M).group(1)
    cons_tile = re.search(r"^(\$L__wg_cons_tile\d+):", text, re.M).group(1)
    head = text[:text.index(prod_tile + ":")]
    # set-up once: every barrier init, the three maps (A, B, D) and their fences before
    # the first tile
    assert text.count("mbarrier.init") == head.count("mbarrier.init") == 2 * desc_stages
    assert text.count("tensormap.replace.tile.global_address") == 3
    assert head.count("tensormap.replace.tile.global_address") == 3
    assert "fence.proxy.tensormap::generic.acquire" in head
    assert text.count("setmaxnreg.dec.sync.aligned.u32 40") == 1
    # one loop per role: the producer's copies and the consumers' wgmma inside their own
    prod = _between(text, prod_tile + ":", f"bra.uni {prod_tile};")
    assert prod.count("cp.async.bulk.tensor") == 2 and "wgmma" not in prod
    cons = _between(text, cons_tile + ":", f"bra.uni {cons_tile};")
    assert cons.count("wgmma.mma_async") == 4 and "cp.async.bulk.tensor.2d.shared" not in cons
    # the epilogue is in the loop: D's 8 boxes through the copy engine, or the registers
    assert cons.count("cp.async.bulk.tensor.2d.global") == 8 and "st.global.v2.f32" in cons
    # ring state carried: the stage/phase registers are set before the tile loop only
    for body, head_of in ((prod, text[:text.index(prod_tile + ":")]),
                          (cons, text[:text.index(cons_tile + ":")])):
        stage = re.search(r"mad\.lo\.u32 %r\d+, (%r\d+), 8, %r\d+;\s*\n\$L__mbw", body)
        assert stage, body[:2000]
        reg = stage.group(1)
        reset = rf"^\s*mov\.u32 {re.escape(reg)}, 0;"        # unpredicated (not the wrap)
        assert re.search(reset, head_of, re.M)
        assert not re.search(reset, body, re.M)
    assert ".maxntid 384, 1, 1" in text


def wgmma_desc(fmt: str, bn: int = 256, out: str = "f32"):
    from toolchain.compiler.ir.tensor import TensorDesc
    return TensorDesc(128, bn, 64, fmt, fmt, "f32", out, b_layout="col", scope="workgroup",
                      persistent=8)


@pytest.mark.parametrize("fmt,bn,out", [("f16", 256, "f32"), ("bf16", 256, "bf16"),
                                        ("f16", 128, "f16")])
def test_no_spills_at_the_entry_cap(ptxas_path, fmt, bn, out):
    assert_entry_cap(ptxas_path, compile_ptx(gemm_source(fmt, bn=bn, out=out,
                                                           persistent=True), "sm_90a"))


def test_fused_epilogue_no_spills(ptxas_path):
    src = gemm_source("f16", out="f16", epilogue="col_bias_relu", persistent=True)
    usage = _usage(ptxas_path, compile_ptx(src, "sm_90a"), "sm_90a")
    assert "0 bytes spill stores" in usage and "warning" not in usage.lower(), usage


@pytest.mark.parametrize("arch", ["sm_121a", "sm_90", "portable"])
def test_other_profiles_loop_over_split_regions(ptxas, arch):
    text = compile_ptx(gemm_source("f16", persistent=True), arch)
    assert "wgmma" not in text and "cp.async.bulk" not in text and "setmaxnreg" not in text
    assert re.search(r"^\$L__wgm_split_tile\d+:", text, re.M)
    assert "div.u64" in text                   # exact tile arithmetic for every M, N, grid
    ptxas(text, {"portable": "sm_75"}.get(arch, arch))


@pytest.mark.parametrize("edit,message", [
    (("scope: workgroup", "scope: subgroup"), "needs `scope: workgroup`"),
    (("persistent: 8", "persistent: 0"), "positive integer constant"),
    (("persistent: 8", "persistent: m"), "positive integer constant"),
])
def test_bad_persistent_option_is_located(edit, message):
    src = gemm_source("f16", persistent=True).replace(*edit)
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0340" and message in d.message and d.span is not None, d


def test_tensor_mma_has_no_persistent_option():
    src = """kernel k(a: uint16*, b: uint16*, c: float32*, d: float32*) {
  tensor_mma(a, b, c, d, shape: m16n16k16, input_type: f16, output_type: f32,
             persistent: 2);
}
"""
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    assert exc.value.diagnostics[0].code == "E0340"
    assert "unknown option `persistent:`" in exc.value.diagnostics[0].message


@pytest.mark.parametrize("arch,persistent,says", [
    ("sm_90a", True, "persistent pipeline: barriers and tensor maps set up once"),
    ("sm_121a", True, "persistent tile loop over split regions"),
    ("sm_90a", False, "one region per workgroup, the sm_90a pipeline; not persistent"),
    ("sm_121a", False, "one region per workgroup, split regions (sm_121a has no wgmma"),
])
def test_explain_line(tmp_path, arch, persistent, says):
    from toolchain.compiler.driver import Options, compile_file
    path = tmp_path / "g.mettle"
    path.write_text(gemm_source("f16", persistent=persistent))
    res = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, explain=True),
                       source_text=path.read_text())
    assert says in res.explain, res.explain


SOURCE = """\
kernel mm(a: uint16*, b: uint16*, c: float32*, d: float32*, pm: uint32, pn: uint32,
          pk: uint32, lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32,
          row0: uint32, col0: uint32) {
  tensor_matmul(a, b, c, d, row0, col0, pm, pn, pk, shape: m64n64k16,
                input_type: f16, output_type: f32, scope: workgroup, persistent: 2,
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);
}
"""


@pytest.mark.parametrize("grid,origin", [(4, (0, 0)), (2, (0, 0)), (9, (0, 0)),
                                         (3, (17, 6))])
def test_split_tile_loop_exact_on_tails(grid, origin):
    """M x N = 150 x 70 from the origin in 64 x 64 tiles (3 x 2 = 6, or 3 x 2 from
    (17, 6)) on `grid` workgroups of 2 warps: fewer, a non-divisor, more than the tiles.
    In-range elements from the origin on equal the exact oracle; everything else of D
    (rows/columns before the origin, padding) stays poisoned."""
    M, N, K = 150, 70, 7
    ptx = ptx_of(SOURCE, "sm_121a", budget=1)        # budget 1: replay (no WMMA here)
    bufs, lds, want = operands("f16", M, N, K, seed=4242 + grid)
    poison = bufs["d"].copy()
    r0, c0 = origin
    mem = Sim(ptx, "mm").run((grid, 1), 64, [("buf", w, bufs[w]) for w in "abcd"] +
                             [("u32", v) for v in (M, N, K, *lds, r0, c0)])
    out = mem.read("d")
    got = O.logical(out, M, N, LAYOUTS[3], lds[3]).astype(np.float64)
    np.testing.assert_array_equal(got[r0:, c0:], want[r0:, c0:])
    r, c = np.meshgrid(np.arange(r0, M), np.arange(c0, N), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index(LAYOUTS[3], lds[3], r, c)] = False
    np.testing.assert_array_equal(out[untouched], poison[untouched])


def test_persistent_never_pairs(monkeypatch):
    """With the experimental pairing on (CLUSTER = 2) a persistent region still runs one
    workgroup per tile sequence: no cluster shape (its grid need not be even), no
    multicast."""
    monkeypatch.setattr(wgmma, "CLUSTER", 2)
    text = compile_ptx(gemm_source("f16", persistent=True), "sm_90a")
    assert "reqnctapercluster" not in text and "multicast" not in text
    assert "wgmma.mma_async" in text
