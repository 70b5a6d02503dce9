"""The wgmma form of register-resident tiles (toolchain/compiler/frontend/tile_wgmma.py,
--gpu-tile-wgmma=on, sm_90a): which kernels take it and why not (`--explain`), the
synchronisation it spells in PTX, that ptxas 13.0 assembles every variant with no stack
and at most 255 registers, and the results on the CPU interpreter with a wgmma model
(wgrs_check.py): exact on small integers for both b layouts (K-major and MN-major
swizzled shared tiles), aligned and misaligned sources, ragged tails and element-by-element
copies; the attention example within the fragment form's tolerance."""
from __future__ import annotations

import re

import numpy as np
import pytest

from examples.attention.attention import SOURCE, reference

from .test_tile_attention import TOL, from_bits, to_bits
from .test_tile_frag import FROM_WORKGROUP, MATMUL, TWO_LOADS, compile_text, layout_remark
from .wgrs_check import run_wgrs

WG = {"arch": "sm_90a", "tile_wgmma": True}


def _matmul(layout: str) -> str:
    return MATMUL.replace(" LAYOUT", ", layout: col" if layout == "col" else "")


@pytest.mark.parametrize("layout,m,k,n,lda,ldb,swizzle", [
    ("row", 70, 32, 48, 32, 48, 32),      # aligned: 16-byte copies, an MN-major b
    ("row", 64, 27, 45, 27, 48, 32),      # ragged k and n, aligned ld: partial copies
    ("row", 50, 32, 48, 33, 49, 32),      # odd ld: element copies
    ("col", 64, 32, 48, 32, 32, 64),      # b read column-major (Kᵀ): a K-major b
    ("col", 90, 19, 41, 19, 21, 64),      # ragged, misaligned
])
def test_matmul_on_wgmma_is_exact(tmp_path, layout, m, k, n, lda, ldb, swizzle):
    objects, explain = compile_text(tmp_path, _matmul(layout), **WG)
    assert layout_remark(explain).endswith(
        f"on wgmma (A from registers), shared tiles in the {swizzle}-byte swizzled layout: "
        "`tb`")
    text = compile_text.ptx
    assert "mma.sync" not in text and "ldmatrix" not in text
    trans = 1 if layout == "row" else 0
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n48k16\.f32\.f16\.f16 "
                     rf"\{{[^}}]*\}}, \{{[^}}]*\}}, %rd\d+, %p\d+, 1, 1, {trans};", text)
    rng = np.random.default_rng(m + k + n)
    a = rng.integers(-3, 4, (m, lda)).astype(np.float16)
    bmat = rng.integers(-3, 4, (k, n)).astype(np.float16)
    if layout == "row":
        bmem = np.zeros((k, ldb), np.float16)
        bmem[:, :n] = bmat
    else:
        bmem = np.zeros((n, ldb), np.float16)
        bmem[:, :k] = bmat.T
    c = rng.integers(-20, 20, (m, n)).astype(np.float32)
    mem = run_wgrs(objects, "mm", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", bmem.view(np.uint16).ravel()),
        ("buf", "c", c.ravel()), ("buf", "d", np.zeros(m * n, np.float32)),
        ("u32", m), ("u32", k), ("u32", n), ("u32", lda), ("u32", ldb)],
        grid=(-(-m // 64), 1, 1))
    want = a[:, :k].astype(np.float64) @ bmat.astype(np.float64) + c
    assert np.array_equal(mem.read("d").reshape(m, n), want.astype(np.float32))


def test_back_to_back_loads_and_element_copies_on_wgmma(tmp_path):
    objects, _ = compile_text(tmp_path, TWO_LOADS, **WG)
    m, k = 70, 32
    rng = np.random.default_rng(3)
    a = rng.integers(-2, 3, (m, k)).astype(np.float16)
    b1 = rng.integers(-2, 3, (k, 32)).astype(np.float16)
    c = rng.integers(-2, 3, (32, k)).astype(np.float16)
    mem = run_wgrs(objects, "two", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", b1.view(np.uint16).ravel()),
        ("buf", "c", c.view(np.uint16).ravel()), ("buf", "d", np.zeros(m * 32, np.float32)),
        ("u32", m), ("u32", k)], grid=(-(-m // 64), 1, 1))
    x = a.astype(np.float64) @ b1.astype(np.float64)
    want = x @ c.T.astype(np.float64) + x
    assert np.array_equal(mem.read("d").reshape(m, 32), want.astype(np.float32))

    objects, explain = compile_text(tmp_path, FROM_WORKGROUP, **WG)
    assert "on wgmma" in layout_remark(explain)
    assert "cp.async.cg" not in compile_text.ptx and "st.shared.u16" in compile_text.ptx
    rng = np.random.default_rng(8)
    a = rng.integers(-3, 4, (64, 32)).astype(np.float16)
    bm = rng.integers(-3, 4, (32, 32)).astype(np.float16)
    mem = run_wgrs(objects, "wg", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", bm.view(np.uint16).ravel()),
        ("buf", "d", np.zeros(64 * 32, np.float32)), ("u32", 64)])
    want = a.astype(np.float64) @ bm.astype(np.float64)
    assert np.array_equal(mem.read("d").reshape(64, 32), want.astype(np.float32))


def attention(tmp_path, fmt, d, block_m, block_n, work_items, **opts):
    text = SOURCE.read_text(encoding="utf-8")
    return compile_text(
        tmp_path, text.replace("kernel(block = 256)", f"kernel(block = {work_items})"),
        consts=(("HEAD_DIM", str(d)), ("ELEM", fmt), ("BLOCK_M", str(block_m)),
                ("BLOCK_N", str(block_n))), **opts)


@pytest.mark.parametrize("fmt,n,causal,d,block_m,block_n,work_items", [
    ("f16", 70, True, 16, 64, 16, 128),       # one slab per subgroup, five key blocks
    ("bf16", 100, False, 32, 128, 32, 128),   # two slabs per subgroup, ragged last block
    ("f16", 100, True, 128, 128, 64, 256),    # the shipped d128 variant: two warpgroups
    ("bf16", 100, False, 64, 128, 128, 256),  # the shipped d64 variant
])
def test_attention_example_on_wgmma_matches_the_float64_oracle(tmp_path, fmt, n, causal, d,
                                                               block_m, block_n, work_items):
    objects, explain = attention(tmp_path, fmt, d, block_m, block_n, work_items, **WG)
    assert "on wgmma" in layout_remark(explain)
    bh = 2 if work_items == 128 else 1
    rng = np.random.default_rng(n + d)
    q, k, v = (to_bits(rng.uniform(-1, 1, (bh, n, d)), fmt) for _ in range(3))
    scale = d ** -0.5
    mem = run_wgrs(objects, "attention", work_items, [
        ("buf", "q", q.ravel()), ("buf", "k", k.ravel()), ("buf", "v", v.ravel()),
        ("buf", "o", np.zeros(bh * n * d, np.uint16)), ("u32", n),
        ("u32", int(np.float32(scale).view(np.uint32))), ("u32", int(causal))],
        grid=(-(-n // block_m), bh, 1))
    got = from_bits(mem.read("o").reshape(bh, n, d), fmt)
    want = reference(from_bits(q, fmt), from_bits(k, fmt), from_bits(v, fmt), causal, scale)
    assert np.abs(got - want).max() <= TOL[fmt], np.abs(got - want).max()


def test_the_example_spells_the_synchronisation(tmp_path):
    """Each publishing barrier follows a proxy fence that follows the copy wait; each
    matmul is fence, its k steps, commit, wait 0 (nothing touches the accumulators in
    between); no ldmatrix or mma.sync is left."""
    _, explain = attention(tmp_path, "f16", 64, 128, 128, 256, **WG)
    assert layout_remark(explain).endswith(
        "(8 subgroups) on wgmma (A from registers), shared tiles in the 128-byte swizzled "
        "layout: `kt`, `vt`")
    lines = [x.strip() for x in compile_text.ptx.splitlines()]
    assert ".shared .align 1024 .b8 attention_tile_kt[16384];" in lines
    assert ".shared .align 1024 .b8 attention_tile_vt[16384];" in lines
    assert not [x for x in lines if x.startswith(("ldmatrix", "mma.sync"))]
    bars = [i for i, x in enumerate(lines) if x.startswith("bar.sync")]
    assert len(bars) == 3
    for i in bars:
        assert lines[i - 1] == "fence.proxy.async.shared::cta;"
        assert lines[i - 2].startswith("cp.async.wait_group")
    groups = re.findall(r"wgmma\.fence\.sync\.aligned;\n((?:\s*wgmma\.mma_async[^\n]*\n)+)"
                        r"\s*wgmma\.commit_group\.sync\.aligned;\n"
                        r"\s*wgmma\.wait_group\.sync\.aligned 0;", compile_text.ptx)
    assert [g.count("m64n128k16") for g in groups] == [4, 0]
    assert [g.count("m64n64k16") for g in groups] == [0, 8]
    assert compile_text.ptx.count("wgmma.mma_async") == 12


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_attention_variants_on_wgmma_fit_the_registers(ptxas_path, tmp_path, d, fmt):
    """The four shipped variants (block 256) with the option on: ptxas 13.0 reports no
    stack frame, no spills, at most 255 registers and 32 KiB of static shared memory."""
    from tools.gpu.ptxas_runner import assemble

    _, explain = attention(tmp_path, fmt, d, 128, 8192 // d, 256, **WG)
    assert "on wgmma" in layout_remark(explain)
    path = tmp_path / "attention.ptx"
    path.write_text(compile_text.ptx)
    (res,) = assemble(ptxas_path, "sm_90a", str(path))[1]
    assert res.stack_frame_bytes == 0
    assert res.spill_stores_bytes == 0 and res.spill_loads_bytes == 0
    assert res.registers <= 255
    assert res.shared_bytes == 32 * 1024


def test_ptxas_assembles_the_matmul_kernels(ptxas, tmp_path):
    for src in (_matmul("row"), _matmul("col"), TWO_LOADS, FROM_WORKGROUP):
        compile_text(tmp_path, src, **WG)
        assert "wgmma.mma_async" in compile_text.ptx
        ptxas(compile_text.ptx, "sm_90a")


def seven_tiles() -> str:
    """Seven 16 x 208 shared tiles: 48384 bytes padded (the mma.sync form fits), 50176
    with each swizzled tile's base 1024-byte aligned."""
    loads = "".join(f"    var b{i}: tile<f16, 16, 208> = tile_load(b, {16 * i}, 0, 112, 208);\n"
                    for i in range(7))
    stores = "".join(f"    tile_store(d, tensor_matmul(ta, b{i}), 0, {i}, 64, 208);\n"
                     for i in range(7))
    return ("kernel(block = 128) seven(a: uint16*, b: uint16*, d: float32*) {\n"
            "    var ta: tile<f16, 64, 16> = tile_load(a, 0, 0, 64, 16);\n" + loads + stores
            + "}\n")


def test_explain_says_why_a_kernel_keeps_mma_sync(tmp_path):
    """The tile types' rules (extents 1 or multiples of 16 up to 256, blocks of whole
    warpgroups) leave wgmma's shape rules nothing to refuse; the workgroup memory of the
    swizzled layout can be."""
    _, explain = compile_text(tmp_path, seven_tiles(), **WG)
    remark = layout_remark(explain)
    assert remark.endswith("not on wgmma: the swizzled shared tiles need 50176 bytes of "
                           "workgroup memory (at most 49152)"), remark
    assert "mma.sync" in compile_text.ptx and "wgmma" not in compile_text.ptx


@pytest.mark.parametrize("arch,opts", [("sm_90a", {}), ("sm_90a", {"tile_wgmma": False}),
                                       ("sm_80", {"tile_wgmma": True})])
def test_the_option_off_or_a_target_without_wgmma_keeps_mma_sync(tmp_path, arch, opts):
    _, explain = compile_text(tmp_path, _matmul("row"), arch=arch, **opts)
    assert layout_remark(explain).endswith("(workgroup memory, ldmatrix): `tb`")
    assert "wgmma" not in compile_text.ptx and "fence.proxy" not in compile_text.ptx
