"""The CPU oracle against independent definitions: exhaustive narrow-format tables built
with exact rational arithmetic from each format's (exponent, mantissa, bias, specials)
definition, anchor values, LSB-first streams, sparse order and region semantics."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tests.support import tensor_oracle as O

# name -> (width, exponent bits, mantissa bits, bias, signed, NaN codes, inf codes)
DEFS = {
    "e4m3": (8, 4, 3, 7, True, {0x7F, 0xFF}, set()),
    "e5m2": (8, 5, 2, 15, True, {c for c in range(256) if (c & 0x7C) == 0x7C and c & 3},
             {0x7C, 0xFC}),
    "e2m1": (4, 2, 1, 1, True, set(), set()),
    "e2m3": (6, 2, 3, 1, True, set(), set()),
    "e3m2": (6, 3, 2, 3, True, set(), set()),
    "ue4m3": (8, 4, 3, 7, False, {0x7F} | set(range(0x80, 0x100)), set()),
}


def reference(fmt: str, code: int):
    width, eb, mb, bias, signed, nans, infs = DEFS[fmt]
    if code in nans:
        return "nan"
    neg = signed and code >> (width - 1) & 1
    if code in infs:
        return Fraction(-1 if neg else 1) * 10**9
    e, m = (code >> mb) & ((1 << eb) - 1), code & ((1 << mb) - 1)
    mag = Fraction(m, 1 << mb) * Fraction(2) ** (1 - bias) if e == 0 else \
        (1 + Fraction(m, 1 << mb)) * Fraction(2) ** (e - bias)
    return -mag if neg else mag


@pytest.mark.parametrize("fmt", sorted(DEFS))
def test_exhaustive_decode_table(fmt):
    width = DEFS[fmt][0]
    for code in range(1 << width):
        got, want = O.decode(fmt, code), reference(fmt, code)
        if want == "nan":
            assert math.isnan(got), (fmt, hex(code))
        elif abs(want) == 10**9:
            assert math.isinf(got) and (got > 0) == (want > 0), (fmt, hex(code))
        else:
            assert Fraction(got) == want, (fmt, hex(code), got, want)
            if want == 0:
                assert math.copysign(1, got) == (-1 if code >> (width - 1) & 1
                                                 and DEFS[fmt][4] else 1)


@pytest.mark.parametrize("fmt,maximum,min_sub", [
    ("e4m3", 448, 2.0**-9), ("e5m2", 57344, 2.0**-16), ("e2m1", 6, 0.5),
    ("e2m3", 7.5, 0.125), ("e3m2", 28, 0.0625), ("ue4m3", 448, 2.0**-9)])
def test_format_anchors(fmt, maximum, min_sub):
    vals = [O.decode(fmt, c) for c in range(1 << DEFS[fmt][0])]
    finite = [v for v in vals if math.isfinite(v)]
    assert max(finite) == maximum
    assert min(v for v in finite if v > 0) == min_sub


def test_e2m1_value_set_and_ue8m0():
    assert sorted({abs(O.decode("e2m1", c)) for c in range(16)}) == \
        [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert O.decode("ue8m0", 127) == 1.0 and O.decode("ue8m0", 0) == 2.0**-127
    assert O.decode("ue8m0", 254) == 2.0**127 and math.isnan(O.decode("ue8m0", 255))


@pytest.mark.parametrize("bits", [1, 4, 6, 8])
def test_lsb_first_streams_round_trip(bits):
    rng = np.random.default_rng(bits)
    codes = rng.integers(0, 1 << bits, size=37)
    stream = O.pack_lsb(codes, bits)
    assert len(stream) == (37 * bits + 7) // 8
    np.testing.assert_array_equal(O.unpack_lsb(stream, bits, 37), codes)


def test_lsb_first_bit_positions():
    # element 0 in the low nibble, element 1 in the high nibble; 6-bit values straddle
    assert list(O.pack_lsb([0x3, 0xA], 4)) == [0xA3]
    assert list(O.pack_lsb([0b111111, 0b000001], 6)) == [0b01111111, 0b0000]


def test_sparse_compress_order_and_invalid_mask_clamp():
    dense = np.arange(16, dtype=np.float64).reshape(2, 8) + 1
    masks = np.array([[0b0101, 0b1100], [0b1010, 0b0111]], dtype=np.uint8)
    vals, _ = O.compress_2_4(dense, masks)
    np.testing.assert_array_equal(vals[0], [1, 3, 7, 8])
    back = O.decompress_2_4(vals, masks, 8)
    np.testing.assert_array_equal(back[0], [1, 0, 3, 0, 0, 0, 7, 8])
    # row 1 group 1 has an invalid (3-bit) mask: clamped to 0b0011
    np.testing.assert_array_equal(back[1, 4:], [vals[1, 2], vals[1, 3], 0, 0])


def test_region_semantics_bounds_k0_and_tails():
    rng = np.random.default_rng(3)
    M, N, K = 19, 23, 21
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    C, D = rng.standard_normal((M, N)), np.full((M, N), 7.0)
    out = O.matmul_region(A, B, C, D, 16, 16, M, N, K, 16, 16)
    np.testing.assert_allclose(out[16:, 16:], A[16:] @ B[:, 16:] + C[16:, 16:])
    assert (out[:16] == 7).all() and (out[:, :16] == 7).all()
    k0 = O.matmul_region(A, B, C, D, 0, 0, M, N, 0, 16, 16)
    np.testing.assert_array_equal(k0[:16, :16], C[:16, :16])
    none = O.matmul_region(A, B, C, D, 32, 0, M, N, K, 16, 16)
    np.testing.assert_array_equal(none, D)


def test_integer_wrap_and_layout_views():
    a = np.full((1, 2), 2**30, dtype=np.int64)
    b = np.full((2, 1), 2, dtype=np.int64)
    assert O.mma_tile(a, b, np.zeros((1, 1)), integer=True)[0, 0] == 0
    buf = np.arange(12)
    np.testing.assert_array_equal(O.logical(buf, 2, 3, "row", 4), [[0, 1, 2], [4, 5, 6]])
    np.testing.assert_array_equal(O.logical(buf, 2, 3, "col", 4), [[0, 4, 8], [1, 5, 9]])
    np.testing.assert_array_equal(O.logical(buf, 2, 3, "row", 4, transpose=True),
                                  [[0, 4, 8], [1, 5, 9]])


def test_epilogue_nan_and_signed_zero_rules():
    d = np.array([-0.0, -1.0, np.nan, 3.0, 0.5], dtype=np.float32)
    r = O.epilogue(d, "f32", activation="relu")
    assert math.copysign(1, r[0]) == -1 and r[1] == 0 and math.copysign(1, r[1]) == 1
    assert math.isnan(r[2]) and r[3] == 3.0
    c = O.epilogue(d, "f32", activation="clamp", lo=-0.25, hi=1.0)
    assert list(c[[1, 3, 4]]) == [-0.25, 1.0, 0.5] and math.isnan(c[2])
    s = O.epilogue(d, "f32", bias=np.ones(5, np.float32), alpha=2.0, beta=0.5)
    np.testing.assert_array_equal(s[[1, 3]], np.float32([-1.5, 6.5]))


def test_scaled_reference_applies_both_block_grids():
    a, b = np.ones((2, 64)), np.ones((64, 3))
    sa = np.array([[1.0, 2.0], [4.0, 8.0]])
    sb = np.ones((2, 3))
    out = O.scaled_matmul(a, b, np.zeros((2, 3)), sa, sb, 32)
    np.testing.assert_array_equal(out[:, 0], [32 * 1 + 32 * 2, 32 * 4 + 32 * 8])
