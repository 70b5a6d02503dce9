"""tools/gpu/cublas_kernels.py's reading of an nvjet kernel's name in D's terms: cuBLAS is
column-major, so the name's M x N tile is N rows by M columns of the row-major D, and the
tile counts and rounds that follow (the arithmetic behind docs/internals/measurements.md's
5000x3000x4104 paragraph)."""
from __future__ import annotations

import pytest

from tools.gpu.cublas_kernels import tile_of, tiling


def test_the_names_tile_is_read_transposed():
    assert tile_of("nvjet_sm90_hsh_256x152_64x4_2x1_v_bz_coopA_TNT") == (152, 256, 1, 2)
    assert tile_of("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA") == (128, 256, 2, 1)
    assert tile_of("nvjet_sm90_qqtst_144x128_128x6_1x2_h_bz_coopA_algo2") == (128, 144, 2, 1)


@pytest.mark.parametrize("name", ["Memset (Device)", "sm90_xmma_gemm_f16f16_f32",
                                  "nvjet_sm90_hsh_256x152"])
def test_other_kernels_have_no_tile(name):
    assert tile_of(name) is None


def test_the_odd_shape_in_three_exact_rounds_against_four():
    assert tiling(5000, 3000, 152, 256) == (396, 3.0, 3 * 152 * 256)
    tiles, rounds, per_sm = tiling(5000, 3000, 128, 240)
    assert (tiles, round(rounds, 2), per_sm) == (520, 3.94, 4 * 128 * 240)
    tiles, rounds, per_sm = tiling(5000, 3000, 128, 256)
    assert (tiles, round(rounds, 2), per_sm) == (480, 3.64, 4 * 128 * 256)
    assert tiling(4096, 4096, 128, 256, sms=128) == (512, 4.0, 4 * 128 * 256)
