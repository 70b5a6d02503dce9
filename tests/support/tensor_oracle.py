"""CPU oracles of the cooperative tensor operations (numpy; used by CPU and hardware tests).

- Bit-exact decoders of every neutral narrow format: E4M3 (FN: no inf, S.1111.111 NaN),
  E5M2 (IEEE-like: inf and NaN), E2M1, E2M3, E3M2 (no inf/NaN), UE8M0 (2^(e-127),
  0xFF NaN), UE4M3 (unsigned E4M3, 0x7F NaN); plus f16, bf16 and tf32 (f32 with the low
  13 mantissa bits cleared, what the tensor core reads).
- Least-significant-bit-first packed streams: logical element i occupies bits
  [i*w, (i+1)*w) of the byte stream, bit 0 of a byte first.
- Matrix views with the neutral layout/leading-dimension/transpose contract.
- References: `mma_tile` (whole tile), `matmul_region` (bounded region with the exact
  in-range/no-op/K==0 semantics), sparse 2:4 compression/decompression with compact
  uint8 masks, block-scaled matmul, and `epilogue` (the exact f32/f64 operation order
  the PTX backend implements, bit-exact).
"""
from __future__ import annotations

import math

import numpy as np

# name -> (exponent bits, mantissa bits, bias, signed, specials)
MINIFLOATS = {
    "e4m3": (4, 3, 7, True, "fn"), "e5m2": (5, 2, 15, True, "ieee"),
    "e2m1": (2, 1, 1, True, "none"), "e2m3": (2, 3, 1, True, "none"),
    "e3m2": (3, 2, 3, True, "none"), "ue4m3": (4, 3, 7, False, "fn"),
}
BITS = {"e4m3": 8, "e5m2": 8, "e2m1": 4, "e2m3": 6, "e3m2": 6, "ue8m0": 8, "ue4m3": 8,
        "i4": 4, "u4": 4, "b1": 1, "i8": 8, "u8": 8}


def decode(fmt: str, code: int) -> float:
    """The exact value of one encoded element (NaN for NaN codes)."""
    if fmt == "ue8m0":
        return math.nan if code == 0xFF else math.ldexp(1.0, code - 127)
    e_bits, m_bits, bias, signed, specials = MINIFLOATS[fmt]
    width = e_bits + m_bits + (1 if signed else 0)
    if fmt == "ue4m3":
        width = 8                        # a byte whose sign bit must be zero
    code &= (1 << width) - 1
    sign = -1.0 if signed and code >> (e_bits + m_bits) & 1 else 1.0
    if fmt == "ue4m3" and code >> 7:
        return math.nan
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    top = (1 << e_bits) - 1
    if specials == "fn" and e == top and m == (1 << m_bits) - 1:
        return math.nan
    if specials == "ieee" and e == top:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - m_bits)
    return sign * math.ldexp((1 << m_bits) + m, e - bias - m_bits)


def decode_array(fmt: str, codes) -> np.ndarray:
    table = np.array([decode(fmt, c) for c in range(1 << BITS[fmt])], dtype=np.float64)
    return table[np.asarray(codes, dtype=np.int64)]


def f16(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(np.float64)


def bf16(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32).astype(np.float64)


def to_bf16_bits(x) -> np.ndarray:
    """Round-to-nearest-even f32 -> bf16 bits (NaN stays NaN)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), r)


def tf32(x) -> np.ndarray:
    u = np.asarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return u.view(np.float32).astype(np.float64)


def pack_lsb(codes, bits: int, nbytes: int | None = None) -> np.ndarray:
    """Pack `bits`-wide codes least-significant-bit first into a uint8 stream."""
    codes = [int(c) & ((1 << bits) - 1) for c in np.asarray(codes).ravel()]
    total = (len(codes) * bits + 7) // 8
    out = bytearray(max(total, nbytes or 0))
    for i, c in enumerate(codes):
        for b in range(bits):
            if c >> b & 1:
                pos = i * bits + b
                out[pos // 8] |= 1 << (pos % 8)
    return np.frombuffer(bytes(out), dtype=np.uint8).copy()


def unpack_lsb(stream, bits: int, count: int) -> np.ndarray:
    data = np.asarray(stream, dtype=np.uint8)
    out = np.zeros(count, dtype=np.int64)
    for i in range(count):
        v = 0
        for b in range(bits):
            pos = i * bits + b
            v |= ((int(data[pos // 8]) >> (pos % 8)) & 1) << b
        out[i] = v
    return out


def index(layout: str, ld: int, r, c):
    """Element offset of logical (r, c) of a stored matrix in `layout` with `ld`."""
    return r * ld + c if layout == "row" else r + c * ld


def logical(buf, rows: int, cols: int, layout: str, ld: int, transpose: bool = False):
    """The logical rows x cols matrix of `buf`; with transpose the buffer stores the
    cols x rows transpose in `layout`."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if transpose:
        return np.asarray(buf)[index(layout, ld, c, r)]
    return np.asarray(buf)[index(layout, ld, r, c)]


def values(fmt: str, buf) -> np.ndarray:
    """Numeric values (float64, or int64 for integers) of a storage buffer."""
    buf = np.asarray(buf)
    if fmt == "f16":
        return f16(buf)
    if fmt == "bf16":
        return bf16(buf)
    if fmt == "tf32":
        return tf32(buf)
    if fmt in ("f32", "f64"):
        return buf.astype(np.float64)
    if fmt in ("i8", "u8", "i32"):
        return buf.astype(np.int64)
    return decode_array(fmt, buf)


def wrap_i32(x) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(
        np.int32)


def mma_tile(a, b, c, integer: bool = False):
    """D = A*B + C on logical matrices (float64 or exact wrapping int32)."""
    if integer:
        return wrap_i32(a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64))
    return a @ b + c


def matmul_region(A, B, C, D, row: int, col: int, M: int, N: int, K: int, m: int, n: int,
                  integer: bool = False):
    """Expected D after one region: logical full matrices A (M x K), B (K x N), C, D
    (M x N, D holding the previous contents). Out-of-range outputs keep their value."""
    out = np.array(D, copy=True)
    r1, c1 = min(row + m, M), min(col + n, N)
    if r1 <= row or c1 <= col:
        return out
    a, b = A[row:r1, :K], B[:K, col:c1]
    out[row:r1, col:c1] = mma_tile(a, b, C[row:r1, col:c1], integer)
    return out


def compress_2_4(dense, masks=None, rng=None):
    """Structured 2:4 compression of logical M x K `dense`: (values M x K/2, masks M x K/4
    uint8). Each 4-group keeps two positions in increasing index order."""
    M, K = dense.shape
    groups = (K + 3) // 4
    rng = rng or np.random.default_rng(0)
    if masks is None:
        choices = [0b0011, 0b0101, 0b1001, 0b0110, 0b1010, 0b1100]
        masks = np.array(rng.choice(choices, size=(M, groups)), dtype=np.uint8)
    vals = np.zeros((M, groups * 2), dtype=dense.dtype)
    for i in range(M):
        for g in range(groups):
            for s, j in enumerate(selected(masks[i, g])):
                vals[i, 2 * g + s] = dense[i, 4 * g + j] if 4 * g + j < K else 0
    return vals, masks


def selected(mask) -> list[int]:
    """The two selected positions of a 2:4 mask; invalid masks clamp to 0b0011."""
    mk = int(mask) & 0xF
    if bin(mk).count("1") != 2:
        mk = 0b0011
    return [j for j in range(4) if mk >> j & 1]


def decompress_2_4(vals, masks, K: int):
    """Logical M x K A from compressed values and masks; invalid masks clamp to 0b0011."""
    M = vals.shape[0]
    out = np.zeros((M, K), dtype=np.float64)
    for i in range(M):
        for g in range(masks.shape[1]):
            for s, j in enumerate(selected(masks[i, g])):
                if 4 * g + j < K:
                    out[i, 4 * g + j] = vals[i, 2 * g + s]
    return out


def scaled_matmul(a, b, c, a_scale, b_scale, block: int):
    """D = (A .* sA) (B .* sB) + C with sA[M, ceil(K/block)] row blocks and
    sB[ceil(K/block), N] column blocks (already decoded to float)."""
    K = a.shape[1]
    q = np.arange(K) // block
    return (a * a_scale[:, q]) @ (b * b_scale[q, :]) + c


def epilogue(d, fmt: str, bias=None, alpha=None, beta=None, activation: str = "identity",
             lo=None, hi=None):
    """Bit-exact reference of tensor_epilogue on logical float values (float32 compute for
    f16/bf16/f32, float64 for f64), returned in the compute type."""
    ct = np.float64 if fmt == "f64" else np.float32
    t = np.asarray(d, dtype=ct).copy()
    with np.errstate(invalid="ignore", over="ignore"):
        if alpha is not None:
            t = ct(alpha) * t
        if bias is not None:
            bb = np.asarray(bias, dtype=ct)
            if beta is not None:
                bb = ct(beta) * bb
            t = t + bb
        if activation == "relu":
            t = np.where(t < 0, ct(0.0), t)
        elif activation == "clamp":
            t = np.where(t < ct(lo), ct(lo), t)
            t = np.where(t > ct(hi), ct(hi), t)
    return t.astype(ct)
