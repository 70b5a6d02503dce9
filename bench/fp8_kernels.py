"""Mettle source of the FP8 workgroup GEMM (docs/reference/gemm-fp8.md), its launch geometry,
exact FP8 encoding of small values and the float oracle: shared by the CPU tests
(tests/tensor/test_wgmma_fp8.py), the hardware tests (tests/gpu/test_gemm_fp8.py) and
bench/gemm.py's FP8 row. It lives here because bench/ never imports tests/."""
from __future__ import annotations

import math

from bench.wgmma_kernels import (EPILOGUES, epilogue_options, epilogue_params, raster,
                                 schedule_option)

BM, BN, BK = 128, 256, 128
GROUP = 8
FP8 = ("e4m3", "e5m2")
# (exponent bits, mantissa bits, bias) of the two formats
FORMATS = {"e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}


def fp8_source(a: str = "e4m3", b: str = "e4m3", out: str = "bf16", scaled: bool = True,
               epilogue: str | None = None, persistent: bool = False, bm: int = BM,
               bn: int = BN, bk: int = BK, group: int = GROUP,
               schedule: str | None = None, cluster: int = 1,
               workspace: bool = False) -> str:
    """kernel gemm8(a, b, c, d, m, n, k, lda, ldb, ldc, ldd, sa, sb[, epilogue params]
    [, ws]):
    D = C + sa*sb*(A*B) (A MxK row-major, B column-major, both FP8 bytes; C f32; D `out`);
    without `scaled` the scale pointers are taken but unused. One region per workgroup in
    groups of `group` row tiles, or `persistent`: the whole of D on any grid.
    `schedule`: the call's `schedule:` option (None: the cooperative default);
    `cluster`: 2 adds `cluster: 2` (persistent only); `workspace`: a last parameter
    `ws: uint32*` passed as `workspace: ws` (persistent only: stream-K)."""
    dty = "float32" if out == "f32" else "uint16"
    ws = ", ws: uint32*" if workspace else ""
    scales = (",\n                a_scale_mode: per_tensor, a_scale_type: f32, a_scale: sa,"
              "\n                b_scale_mode: per_tensor, b_scale_type: f32, b_scale: sb"
              if scaled else "")
    head = f"""\
kernel gemm8(a: uint8*, b: uint8*, c: float32*, d: {dty}*,
             m: uint32, n: uint32, k: uint32,
             lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32,
             sa: float32*, sb: float32*{epilogue_params(dty, epilogue)}{ws}) {{
"""
    if persistent:
        origin, extra = "0, 0", f", persistent: {group}"
        body = ""
    else:
        origin, extra = "row, column", ""
        body = raster(bm, bn, group)
    extra += schedule_option(schedule, cluster) + (", workspace: ws" if workspace else "")
    return head + body + f"""\
  tensor_matmul(a, b, c, d, {origin}, m, n, k,
                shape: m{bm}n{bn}k{bk}, a_type: {a}, b_type: {b}, accumulator_type: f32,
                result_type: {out}, a_layout: row, b_layout: col, scope: workgroup{extra},
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd{scales}{epilogue_options(epilogue)});
}}
"""


def grid(m: int, n: int, bm: int = BM, bn: int = BN) -> int:
    """Workgroups of a one-region-per-workgroup launch (at least one)."""
    return max(1, ((m + bm - 1) // bm) * ((n + bn - 1) // bn))


def native_launch(bm: int = BM, bn: int = BN,
                  schedule: str = "cooperative") -> tuple[int, int]:
    """(work-items per workgroup, dynamic shared bytes) of the sm_90a pipeline."""
    from toolchain.compiler.ir.tensor import TensorDesc
    from toolchain.compiler.targets.ptx.tensor import wgmma_fp8
    desc = TensorDesc(bm, bn, BK, "e4m3", "e4m3", "f32", "f32", b_layout="col",
                      scope="workgroup", schedule=schedule)
    return wgmma_fp8.threads(desc), wgmma_fp8.shared_bytes(desc)


def encode(fmt: str, value: float) -> int:
    """The byte of an exactly representable finite `value` in E4M3/E5M2 (ValueError
    otherwise)."""
    ebits, mbits, bias = FORMATS[fmt]
    sign = 0x80 if math.copysign(1.0, value) < 0 else 0
    x = abs(value)
    if x == 0:
        return sign
    mant, exp = math.frexp(x)                  # x = mant * 2^exp, mant in [0.5, 1)
    e = exp - 1 + bias                         # biased exponent of 1.f form
    if e <= 0:                                 # subnormal: x = m * 2^(1 - bias - mbits)
        m = x / 2.0 ** (1 - bias - mbits)
        if m != int(m) or m >= 1 << mbits:
            raise ValueError(f"{value} is not an {fmt} value")
        return sign | int(m)
    m = (mant * 2 - 1) * (1 << mbits)
    if m != int(m) or e >= (1 << ebits) or (fmt == "e4m3" and e == 15 and m == 7):
        raise ValueError(f"{value} is not an {fmt} value")
    return sign | e << mbits | int(m)


def exact_values(rng, shape, fmt: str):
    """(bytes, float64 values) of random values in +-{0, 0.5, 1, 1.5, 2, 3}: every product
    and every partial sum of a K <= 2000 dot product is exact in f32 (multiples of 0.25
    below 2^13), even in the tensor core's reduced-precision FP8 accumulation."""
    import numpy as np
    choices = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -0.5, -1.0, -1.5, -2.0, -3.0])
    vals = rng.choice(choices, size=shape)
    table = {v: encode(fmt, v) for v in choices}
    bits = np.vectorize(lambda v: table[v], otypes=[np.uint8])(vals)
    return bits.astype(np.uint8), vals.astype(np.float64)


__all__ = ["EPILOGUES", "fp8_source", "grid", "native_launch", "encode", "exact_values"]
