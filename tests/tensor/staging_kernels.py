"""Mettle sources of the WMMA operand-staging tests (targets/ptx/tensor/staging.py), shared
by the CPU suite (tests/tensor/test_wmma_staging.py) and the hardware one
(tests/gpu/test_wmma_staging.py).

D = C + A*B over one subgroup per 16x16 tile of C (4 subgroups per 128-item workgroup):
A is m x k row-major with leading dimension `lda`, starting `aoff` elements into `a`; B is
k x n with leading dimension `ldb`, row- or column-major. Both strides and the A offset are
run-time values, so one module runs the staged form (aligned) and its direct fallback
(lda, ldb not multiples of 8 elements, or A's base not 16-byte aligned).
"""

PARAMS = ("a: uint16*, b: uint16*, c: float32*, m: int32, n: int32, k: int32, lda: int32, "
          "ldb: int32, aoff: int32")

HEAD = """{kernel} {name}({params}) {{
  var tile: int32 = (int32)(block.x * 4 + thread.x / 32);
  var tiles_n: int32 = n / 16;
  if (tile >= (m / 16) * tiles_n) {{ return; }}
  var tm: int32 = tile / tiles_n;
  var tn: int32 = tile % tiles_n;
  var acc: float32* = c + (int64)(tm * 16) * (int64)n + (int64)(tn * 16);
  var ar: uint16* = a + (int64)aoff + (int64)(tm * 16) * (int64)lda;
"""

B_TILE = {"row": "b + (int64)({kk} * {ks}) * (int64)ldb + (int64)(tn * 16)",
          "col": "b + (int64)(tn * 16) * (int64)ldb + (int64)({kk} * {ks})"}

MMA = """tensor_mma(ar + (int64)({kk} * {ks}), {b},
               acc, acc, shape: m16n16k{ks},
               a_type: {fmt}, b_type: {fmt}, accumulator_type: f32, result_type: f32,
               a_layout: row, b_layout: {bl}, c_layout: row, d_layout: row,
               lda: (uint32)lda, ldb: (uint32)ldb, ldc: (uint32)n, ldd: (uint32)n);"""


def _mma(kk: str, fmt: str, bl: str, ks: int = 16) -> str:
    return MMA.format(kk=kk, b=B_TILE[bl].format(kk=kk, ks=ks), fmt=fmt, bl=bl, ks=ks)


def kloop(name: str, fmt: str = "f16", b_layout: str = "row", block: bool = True,
          ks: int = 16) -> str:
    """A run-time K loop over k / ks steps of a m16n16k<ks> tensor_mma (ks / 16 WMMA chunks
    each; columns past the last whole step unused)."""
    kernel = "kernel(block = 128)" if block else "kernel"
    return HEAD.format(kernel=kernel, name=name, params=PARAMS) + f"""  for kk in 0..k / {ks} {{
    {_mma("kk", fmt, b_layout, ks)}
  }}
}}
"""


def chain(name: str, fmt: str = "f16", b_layout: str = "row") -> str:
    """A straight-line chain of three connected MMAs (K = 48)."""
    body = "\n  ".join(_mma(str(i), fmt, b_layout) for i in range(3))
    return HEAD.format(kernel="kernel(block = 128)", name=name, params=PARAMS) + \
        f"  {body}\n}}\n"


# name -> (source, A/B format, B layout)
CASES = {"kloop_f16_row": (kloop("kloop_f16_row"), "f16", "row"),
         "kloop_bf16_col": (kloop("kloop_bf16_col", "bf16", "col"), "bf16", "col"),
         "chain_f16_row": (chain("chain_f16_row"), "f16", "row"),
         "kloop_k32_f16_col": (kloop("kloop_k32_f16_col", b_layout="col", ks=32), "f16", "col")}
ALL = "\n".join(src for src, _, _ in CASES.values())


# The plain-source form of the K loop: no declared block shape, one subgroup per tile over
# however many subgroups the launch's block has. staging.py sizes its areas for
# UNDECLARED_ITEMS work-items and tests the launch at run time.
LAUNCH_HEAD = HEAD.replace("(int32)(block.x * 4 + thread.x / 32)",
                           "(int32)(block.x * (block_dim.x / 32) + thread.x / 32)")


def kloop_launch(name: str = "kloop_launch", fmt: str = "f16", b_layout: str = "row") -> str:
    return LAUNCH_HEAD.format(kernel="kernel", name=name, params=PARAMS) + f"""  for kk in 0..k / 16 {{
    {_mma("kk", fmt, b_layout)}
  }}
}}
"""
