"""Tile `tensor_matmul` on warp tensor cores (frontend/tile_mma.py): on sm_80 and newer the
compiler emits mma.sync m16n8k16 with register fragments; the CPU PTX interpreter runs it
(ptx_sim's dense f16/bf16 fragment maps, written from the PTX ISA) and the results are
checked bit for bit on small integers, where every partial sum is exact and so the
order tiles.md leaves open cannot matter, and within the f32 accumulation bound against
a float64 oracle otherwise. Profiles without the form, SPIR-V and --gpu-tile-mma=off keep
the replay."""
from __future__ import annotations

import numpy as np
import pytest

from .kernels import compile_ptx, compile_ptx_objects
from .tile_sim import TileSim

F = np.float32


def matmul_source(fmt: str, m: int, k: int, n: int, block: int) -> str:
    return f"""
kernel(block = {block}) k(x: uint16*, y: uint16*, c: float32*, o: float32*, p: float32*) {{
    var a: tile<{fmt}, {m}, {k}> = tile_load(x, 0, 0, {m}, {k});
    var b: tile<{fmt}, {k}, {n}> = tile_load(y, 0, 0, {k}, {n});
    var cc: tile<f32, {m}, {n}> = tile_load(c, 0, 0, {m}, {n});
    var d: tile<f32, {m}, {n}> = tensor_matmul(a, b, cc);
    tile_store(o, d, 0, 0, {m}, {n});
    var e: tile<f32, {m}, {n}> = tensor_matmul(a, b);
    tile_store(p, tile_row_sum(e) + e, 0, 0, {m}, {n});
}}
"""


def bits16(x: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "f16":
        return x.astype(np.float16).view(np.uint16)
    return (x.astype(F).view(np.uint32) >> 16).astype(np.uint16)    # exact for the inputs


def run(fmt, m, k, n, block, arch, a, b, c, **opts):
    objects = compile_ptx_objects(matmul_source(fmt, m, k, n, block), arch, **opts)
    sim = TileSim(objects, "k")
    mem = sim.run(1, block, [("buf", "x", bits16(a, fmt).ravel()),
                             ("buf", "y", bits16(b, fmt).ravel()),
                             ("buf", "c", c.ravel()), ("buf", "o", np.zeros(m * n, F)),
                             ("buf", "p", np.zeros(m * n, F))])
    return mem.read("o").reshape(m, n), mem.read("p").reshape(m, n), sim.mmas


# (format, M, K, N, block): 12 warps over 6 column blocks (some warps idle), 4 warps over
# 6 (a second, partial round), several K chunks
SHAPES = [("f16", 32, 32, 48, 128), ("bf16", 16, 48, 48, 384), ("f16", 48, 16, 16, 128)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("fmt,m,k,n,block", SHAPES)
def test_small_integers_match_the_product_bit_for_bit(arch, fmt, m, k, n, block):
    rng = np.random.default_rng(m + k + n)
    a = rng.integers(-8, 8, (m, k)).astype(F)
    b = rng.integers(-8, 8, (k, n)).astype(F)
    c = rng.integers(-100, 100, (m, n)).astype(F)
    d, p, mmas = run(fmt, m, k, n, block, arch, a, b, c)
    assert mmas == 2 * (m // 16) * (n // 8) * (k // 16)     # every block on tensor cores
    e = a.astype(np.float64) @ b
    np.testing.assert_array_equal(d, (e + c).astype(F))
    np.testing.assert_array_equal(p, (e.sum(axis=1, keepdims=True) + e).astype(F))


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_random_inputs_are_within_the_f32_accumulation_bound(fmt):
    m, k, n = 32, 64, 32
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    a16 = bits16(a, fmt)
    a = (a16.view(np.float16) if fmt == "f16" else
         (a16.astype(np.uint32) << 16).view(F)).astype(np.float64)
    b16 = bits16(b, fmt)
    b = (b16.view(np.float16) if fmt == "f16" else
         (b16.astype(np.uint32) << 16).view(F)).astype(np.float64)
    c = rng.uniform(-1, 1, (m, n)).astype(F)
    d, _, mmas = run(fmt, m, k, n, 128, "sm_80", a, b, c)
    assert mmas > 0
    want = a @ b + c
    bound = (k + 1) * 2.0 ** -24 * (np.abs(a) @ np.abs(b) + np.abs(c))
    assert (np.abs(d - want) <= bound).all()


@pytest.mark.parametrize("arch,opts", [("portable", {}), ("sm_75", {}),
                                       ("sm_80", {"tile_mma": False})])
def test_profiles_without_the_form_and_the_off_switch_replay(arch, opts):
    text = compile_ptx(matmul_source("f16", 32, 32, 48, 128), arch, **opts)
    assert "mma.sync" not in text and "fma.rn.f32" in text


def test_a_matmul_too_large_to_stage_replays():
    # b of 256x256 16-bit values is 128 KiB: more than the staging budget
    text = compile_ptx(matmul_source("f16", 16, 256, 256, 128), "sm_80")
    assert "mma.sync" not in text


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptxas_assembles_the_warp_mma_form(ptxas, arch):
    for fmt, m, k, n, block in SHAPES:
        text = compile_ptx(matmul_source(fmt, m, k, n, block), arch)
        assert "mma.sync.aligned.m16n8k16.row.col.f32." + fmt in text
        ptxas(text, arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_attention_variants_stay_in_registers_without_spills(ptxas_path, tmp_path, arch, d,
                                                              fmt):
    """The example's variants take the register-resident form (tile_frag.py): no private
    arrays at all, both matmuls as mma.sync on ldmatrix B fragments (each of the 8
    subgroups owns one 16-row slab: BLOCK_N * d / 128 MMAs per matmul), and ptxas
    reports no stack frame, no spills, at most 255 registers and at most 48 KiB of
    static workgroup memory. (On sm_90a the default is the wgmma form, whose registers
    test_tile_wgmma_form.py checks: here --gpu-tile-wgmma=off keeps this one.)"""
    from examples.attention.attention import SOURCE
    from tools.gpu.ptxas_runner import assemble
    from toolchain.compiler.driver import compile_file
    from tests.support.gpu_opt_mode import options

    opts = options(emit="ptx", gpu_arch=arch, optimize=True, tile_wgmma=False,
                   consts=(("HEAD_DIM", str(d)), ("ELEM", fmt)))
    text = compile_file(str(SOURCE), opts).data.decode()
    block_n = 8192 // d
    assert ".local" not in text
    assert text.count("mma.sync.aligned.m16n8k16.row.col.f32." + fmt) == 2 * block_n * d // 128
    assert text.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == block_n * d // 256
    assert text.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == block_n * d // 256
    assert "shfl.sync.bfly.b32" in text and "cp.async.cg.shared.global" in text
    # one barrier before the first Kᵀ copy, then two per key block (FlashAttention-2's)
    assert text.count("bar.sync") == 3
    path = tmp_path / "attention.ptx"
    path.write_text(text)
    (res,) = assemble(ptxas_path, arch, str(path))[1]
    assert res.stack_frame_bytes == 0
    assert res.spill_stores_bytes == 0 and res.spill_loads_bytes == 0
    assert res.registers <= 255
    assert res.shared_bytes <= 48 * 1024


def test_attention_example_on_tensor_cores_matches_the_float64_oracle(tmp_path):
    """The example with 32-wide tiles (two K chunks, four column blocks per slab), causal,
    ragged n, on sm_80: both matmuls on mma.sync, within the replay test's bf16 tolerance."""
    from examples.attention.attention import reference
    from .test_tile_attention import TOL, WORK_ITEMS, compile_variant, from_bits, to_bits

    fmt, n, d, block, bh = "bf16", 40, 32, 32, 1
    rng = np.random.default_rng(11)
    q, k, v = (to_bits(rng.uniform(-1, 1, (bh, n, d)), fmt) for _ in range(3))
    scale = d ** -0.5
    sim = TileSim(compile_variant(tmp_path, fmt, d, block), "attention")
    mem = sim.run((-(-n // block), bh, 1), WORK_ITEMS, [
        ("buf", "q", q.ravel()), ("buf", "k", k.ravel()), ("buf", "v", v.ravel()),
        ("buf", "o", np.zeros(bh * n * d, np.uint16)), ("u32", n),
        ("u32", int(np.float32(scale).view(np.uint32))), ("u32", 1)])
    assert sim.mmas > 0
    got = from_bits(mem.read("o").reshape(bh, n, d), fmt)
    want = reference(from_bits(q, fmt), from_bits(k, fmt), from_bits(v, fmt), True, scale)
    assert np.abs(got - want).max() <= TOL[fmt], np.abs(got - want).max()
