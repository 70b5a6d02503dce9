"""Tile values under the canonical replay (docs/reference/tiles.md): the compiler's PTX for
sm_80, sm_90a and portable, run on the CPU interpreter, against a numpy oracle written
from the reference page, bit for bit (tile_exp2 uses the interpreter's model of
ex2.approx.ftz on both sides); ptxas assembles every profile."""
from __future__ import annotations

import numpy as np
import pytest

from .kernels import compile_ptx, compile_ptx_objects
from .tile_sim import ex2_ftz, fma_f32, run_tiles

ATTN_LIKE = """
kernel(block = 128) k(x: float32*, y: uint16*, o: float32*, n: uint32) {
    var a: tile<f32, 32, 32> = tile_load(x, 0, 0, n, 32);
    var b: tile<f32, 32, 32> = tile_exp2(a * 2.0 + 1.0);
    var m: tile<f32, 32, 1> = tile_row_max(b);
    var s: tile<f32, 32, 1> = tile_row_sum(b - m);
    var h: tile<f16, 32, 32> = tile_convert(a, to: f16);
    var w: tile<f16, 32, 32> = tile_load(y, 0, 0, 32, 32, layout: col);
    var c: tile<f32, 32, 32> = tensor_matmul(h, w, b / s);
    c = tile_mask(c, 0, 0, n, n, fill: -1.0, upper: 0);
    tile_store(o, c, 0, 0, n, 32, ld: 32);
}
"""

COLUMNS = """
kernel(block = 384) k2(x: float32*, o: float32*, v: float32*, h: uint16*) {
    var a: tile<f32, 16, 80> = tile_load(x, 0, 0, 16, 80);
    var cm: tile<f32, 1, 80> = tile_col_max(a);
    var cs: tile<f32, 1, 80> = tile_col_sum(a);
    var z: tile<f32, 16, 80> = tile_fma(a, cs, -a);
    var f: tile<f32, 16, 80> = tile_fill(0.5);
    z = tile_min(z, cm) + f;
    tile_store(o, z, 0, 0, 16, 80);
    tile_store(v, cs, 0, 0, 1, 80);
    var hb: tile<bf16, 16, 80> = tile_convert(z, to: bf16);
    tile_store(h, hb, 0, 0, 16, 80);
}
"""

F = np.float32


def canonical_row_sum(row):
    acc = []
    for q in range(4):
        cols = [c for c in range(len(row)) if (c // 2) % 4 == q]
        s = row[cols[0]]
        for c in cols[1:]:
            s = F(s + row[c])
        acc.append(s)
    return F(F(acc[0] + acc[1]) + F(acc[2] + acc[3]))


def attn_like_oracle(x, y, n):
    a = np.zeros((32, 32), F)
    a[:n] = x[:n]
    b = np.vectorize(ex2_ftz, otypes=[F])(F(a * F(2)) + F(1))
    m = b.max(axis=1)
    s = np.array([canonical_row_sum(r) for r in (b - m[:, None]).astype(F)], F)
    h = a.astype(np.float16).astype(F)
    w = y.view(np.float16).astype(F).reshape(32, 32).T
    with np.errstate(divide="ignore", invalid="ignore"):     # rows past n sum to 0
        c = (b / s[:, None]).astype(F)
    for i in range(32):
        for j in range(32):
            acc = c[i, j]
            for q in range(32):
                acc = fma_f32(h[i, q], w[q, j], acc)
            c[i, j] = acc
    ii, jj = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    c[(ii >= n) | (jj >= n) | (jj - ii > 0)] = F(-1)
    o = np.zeros((32, 32), F)
    o[:n] = c[:n]
    return o


@pytest.mark.parametrize("arch", ["sm_80", "portable"])
def test_softmax_and_matmul_chain_matches_the_oracle_bit_for_bit(arch):
    rng = np.random.default_rng(1)
    x = rng.integers(-4, 4, (32, 32)).astype(F)
    y = rng.integers(-3, 4, (32, 32)).astype(np.float16).view(np.uint16)
    n = 30
    # the replay's matmul order is what the oracle spells out: sm_80's warp-MMA path
    # (test_tile_mma.py) is turned off here
    mem = run_tiles(compile_ptx_objects(ATTN_LIKE, arch, tile_mma=False), "k", 128,
                    [("buf", "x", x.ravel()), ("buf", "y", y.ravel()),
                     ("buf", "o", np.zeros(32 * 32, F)), ("u32", n)])
    got = mem.read("o").reshape(32, 32)
    want = attn_like_oracle(x, y, n)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def column_input():
    rng = np.random.default_rng(2)
    x = (rng.integers(-64, 64, (16, 80)) / 8).astype(F)
    x[3, 5], x[4, 5] = F(-0.0), F(0.0)
    return x


def column_oracle(x):
    """(z, column sums, z as bf16 bits) of the COLUMNS kernel."""
    cm = x.max(axis=0)
    cs = np.zeros(80, F)
    for j in range(80):
        s = x[0, j]
        for i in range(1, 16):
            s = F(s + x[i, j])
        cs[j] = s
    z = np.array([[fma_f32(x[i, j], cs[j], -x[i, j]) for j in range(80)] for i in range(16)], F)
    z = (np.minimum(z, cm[None, :]) + F(0.5)).astype(F)
    bits = z.view(np.uint32).astype(np.uint64)
    bf = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return z, cs, bf


def test_column_reductions_broadcasts_and_bf16_stores_with_a_ragged_block():
    x = column_input()
    mem = run_tiles(compile_ptx_objects(COLUMNS, "sm_80"), "k2", 384,
                    [("buf", "x", x.ravel()), ("buf", "o", np.zeros(16 * 80, F)),
                     ("buf", "v", np.zeros(80, F)), ("buf", "h", np.zeros(16 * 80, np.uint16))])
    z, cs, bf = column_oracle(x)
    np.testing.assert_array_equal(mem.read("v").view(np.uint32), cs.view(np.uint32))
    np.testing.assert_array_equal(mem.read("o").reshape(16, 80).view(np.uint32),
                                  z.view(np.uint32))
    np.testing.assert_array_equal(mem.read("h").reshape(16, 80), bf)


@pytest.mark.parametrize("arch,sm", [("portable", "sm_75"), ("sm_80", "sm_80"),
                                     ("sm_89", "sm_89"), ("sm_90a", "sm_90a"),
                                     ("sm_121a", "sm_121a")])
def test_ptxas_assembles_tiles_on_every_profile(ptxas, arch, sm):
    for src in (ATTN_LIKE, COLUMNS):
        ptxas(compile_ptx(src, arch), sm)
