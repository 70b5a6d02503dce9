"""Mettle source of the workgroup-scope GEMM (docs/reference/gemm.md, examples/gemm/gemm.mettle) and
its launch geometry, shared by the CPU tests (tests/tensor/test_wgmma*.py) and
bench/gemm.py with bench/gemm_hopper.py (whose --check runs are the hardware checks of
tests/gpu/test_gemm_hopper.py). It lives here because bench/ never imports tests/."""
from __future__ import annotations

BM, BN = 128, 256
GROUP = 8                                  # row tiles per L2 group of the tile order


# Fused epilogues the tests and the benchmark exercise (docs/reference/gemm.md "Fused epilogue"):
# name -> tensor_matmul options. A kernel with an epilogue takes six more parameters,
# always in this order: bias (D's storage type), ldbias, alpha, beta, lo, hi.
EPILOGUES = {
    "relu": "activation: relu",
    "scale_clamp": "alpha: alpha, activation: clamp, clamp_min: lo, clamp_max: hi",
    "row_bias": "bias_mode: row, bias: bias, alpha: alpha",
    "col_bias_relu": "bias_mode: column, bias: bias, beta: beta, activation: relu",
    "matrix_bias": "bias_mode: matrix, bias: bias, ldbias: ldbias, beta: beta",
    "matrix_bias_col": "bias_mode: matrix, bias_layout: col, bias: bias, ldbias: ldbias, "
                       "alpha: alpha, beta: beta, activation: clamp, clamp_min: lo, "
                       "clamp_max: hi",
}
EPILOGUE_PARAMS = ("bias", "ldbias", "alpha", "beta", "lo", "hi")


def epilogue_params(dty: str, epilogue: str | None) -> str:
    if not epilogue:
        return ""
    return (f",\n            bias: {dty}*, ldbias: uint32, alpha: float32, beta: float32, "
            "lo: float32, hi: float32")


def epilogue_options(epilogue: str | None) -> str:
    return f",\n                {EPILOGUES[epilogue]}" if epilogue else ""


def raster(bm: int, bn: int, group: int) -> str:
    """The kernel lines that give a workgroup its tile (`row`, `column`), grouped `group`
    tile rows at a time for L2 reuse."""
    return f"""\
  var tiles_m: uint32 = (m + {bm - 1}) / {bm};
  var tiles_n: uint32 = (n + {bn - 1}) / {bn};
  var per_group: uint32 = {group} * tiles_n;
  var first: uint32 = (block.x / per_group) * {group};
  var rows: uint32 = tiles_m - first;
  if (rows > {group}) {{ rows = {group}; }}
  var t: uint32 = block.x % per_group;
  var row: uint32 = (first + t % rows) * {bm};
  var column: uint32 = (t / rows) * {bn};
"""


def gemm_source(fmt: str = "f16", bm: int = BM, bn: int = BN, group: int = GROUP,
                out: str = "f32", epilogue: str | None = None,
                persistent: bool = False, schedule: str | None = None,
                cluster: int = 1, workspace: bool = False) -> str:
    """The whole GEMM: one workgroup per bm x bn region of D = A*B + C, tiles visited in
    groups of `group` row tiles (each column sweep reuses those A rows from L2). `out`:
    D's format (f32, or f16/bf16 rounded once from the f32 sum; C stays f32).
    `epilogue`: a name of EPILOGUES fused onto the region (None: none). `persistent`:
    the same tile order as `persistent: group` on one call, for any grid (launch about
    one workgroup per multiprocessor: persistent_grid). `schedule`: the call's
    `schedule:` option (None: none, the cooperative default); `cluster`: 2 adds
    `cluster: 2` (persistent only: launch persistent_grid(..., cluster=2)); `workspace`:
    a last parameter `ws: uint32*` passed as `workspace: ws` (persistent only: stream-K,
    wgmma_streamk.workspace_bytes)."""
    sched = schedule_option(schedule, cluster)
    ws_param, ws_opt = (", ws: uint32*", ", workspace: ws") if workspace else ("", "")
    dty = "float32" if out == "f32" else "uint16"
    types = "output_type: f32" if out == "f32" else \
        f"accumulator_type: f32, result_type: {out}"
    if persistent:
        return f"""\
kernel gemm(a: uint16*, b: uint16*, c: float32*, d: {dty}*,
            m: uint32, n: uint32, k: uint32,
            lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32{epilogue_params(dty, epilogue)}{ws_param}) {{
  tensor_matmul(a, b, c, d, 0, 0, m, n, k,
                shape: m{bm}n{bn}k64, input_type: {fmt}, {types},
                a_layout: row, b_layout: col, scope: workgroup, persistent: {group}{sched}{ws_opt},
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd{epilogue_options(epilogue)});
}}
"""
    return f"""\
kernel gemm(a: uint16*, b: uint16*, c: float32*, d: {dty}*,
            m: uint32, n: uint32, k: uint32,
            lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32{epilogue_params(dty, epilogue)}) {{
{raster(bm, bn, group)}  tensor_matmul(a, b, c, d, row, column, m, n, k,
                shape: m{bm}n{bn}k64, input_type: {fmt}, {types},
                a_layout: row, b_layout: col, scope: workgroup{sched},
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd{epilogue_options(epilogue)});
}}
"""


def parse_knob(wgmma, text: str) -> tuple[str, int | bool]:
    """`KNOB=INT` as (KNOB, the value in the knob's own type) for the pipeline module
    `wgmma` (toolchain/compiler/targets/ptx/tensor/wgmma.py): what bench/gemm.py's --knob
    and --baseline and tools/gpu/gemm_case.py's --knob set before compiling. ValueError
    unless KNOB is one of its upper-case settings and INT an integer."""
    name, _, value = text.partition("=")
    if not (name.isupper() and hasattr(wgmma, name) and value.lstrip("-").isdigit()):
        raise ValueError(f"{text!r}: expected KNOB=INT, KNOB one of the upper-case settings "
                         "of toolchain/compiler/targets/ptx/tensor/wgmma.py")
    return name, type(getattr(wgmma, name))(int(value))


def schedule_option(schedule: str | None, cluster: int = 1) -> str:
    """`, schedule: <schedule>` (and `, cluster: 2` for cluster 2) for a tensor_matmul's
    options ("" for None and 1)."""
    return (f", schedule: {schedule}" if schedule else "") + \
        (f", cluster: {cluster}" if cluster != 1 else "")


def grid(m: int, n: int, bm: int = BM, bn: int = BN, cluster: int = 2) -> int:
    """Workgroups along x: one per region, rounded up to whole clusters (the sm_90a kernel
    runs in pairs; a spare workgroup's region is out of range and does nothing)."""
    tiles = ((m + bm - 1) // bm) * ((n + bn - 1) // bn)
    return (tiles + cluster - 1) // cluster * cluster


SMS = 132                                  # H200 multiprocessors


def persistent_grid(m: int, n: int, bm: int = BM, bn: int = BN, sms: int = SMS,
                    cluster: int = 1) -> int:
    """Workgroups of a persistent launch: one per multiprocessor, fewer when there are
    fewer tiles (at least one, so M = 0 or N = 0 still launches). `cluster: 2`: whole
    clusters, one per pair tile (2·bm rows) at most, so an even count."""
    if cluster == 2:
        pairs = ((m + 2 * bm - 1) // (2 * bm)) * ((n + bn - 1) // bn)
        return 2 * max(1, min(sms // 2, pairs))
    return max(1, min(sms, ((m + bm - 1) // bm) * ((n + bn - 1) // bn)))


def native_launch(fmt: str = "f16", bm: int = BM, bn: int = BN,
                  out: str = "f32", schedule: str = "cooperative") -> tuple[int, int]:
    """(work-items per workgroup, dynamic shared bytes) of the native sm_90a path."""
    from toolchain.compiler.ir.tensor import TensorDesc
    from toolchain.compiler.targets.ptx.tensor import wgmma
    desc = TensorDesc(bm, bn, 64, fmt, fmt, "f32", out, b_layout="col",
                      scope="workgroup", schedule=schedule)
    return wgmma.threads(desc), wgmma.shared_bytes(desc)


def epilogue_oracle(epilogue: str | None, t, bias, alpha: float, beta: float, lo: float,
                    hi: float):
    """tensor_epilogue's arithmetic in float32 numpy, step by step (no contraction), on
    the f32 sums `t` (M x N) with `bias` the logical bias (row: M, column: N, matrix:
    M x N, already widened to float32); returns float32 before D's rounding."""
    import numpy as np
    if not epilogue:
        return t
    opts = EPILOGUES[epilogue]
    f32 = np.float32
    t = t.astype(f32)
    with np.errstate(all="ignore"):
        if "alpha:" in opts:
            t = f32(alpha) * t
        if "bias:" in opts:
            b = bias.astype(f32)
            if "beta:" in opts:
                b = f32(beta) * b
            b = b[:, None] if "bias_mode: row" in opts else b
            t = t + b
        if "relu" in opts:
            t = np.where(t < 0, f32(0), t)
        if "clamp" in opts:
            t = np.where(t < f32(lo), f32(lo), t)
            t = np.where(t > f32(hi), f32(hi), t)
    return t.astype(f32)
