"""Mettle source of the workgroup-scope GEMM (docs/gemm.md, examples/gemm/gemm.mettle) and
its launch geometry, shared by the CPU tests (tests/tensor/test_wgmma*.py), the hardware
checks (tests/gpu/gemm_hopper.py) and bench/gemm.py."""
from __future__ import annotations

BM, BN = 128, 256
GROUP = 8                                  # row tiles per L2 group of the tile order


def gemm_source(fmt: str = "f16", bm: int = BM, bn: int = BN, group: int = GROUP,
                out: str = "f32") -> str:
    """The whole GEMM: one workgroup per bm x bn region of D = A*B + C, tiles visited in
    groups of `group` row tiles (each column sweep reuses those A rows from L2). `out`:
    D's format (f32, or f16/bf16 rounded once from the f32 sum; C stays f32)."""
    dty = "float32" if out == "f32" else "uint16"
    types = "output_type: f32" if out == "f32" else \
        f"accumulator_type: f32, result_type: {out}"
    return f"""\
kernel gemm(a: uint16*, b: uint16*, c: float32*, d: {dty}*,
            m: uint32, n: uint32, k: uint32,
            lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32) {{
  var tiles_m: uint32 = (m + {bm - 1}) / {bm};
  var tiles_n: uint32 = (n + {bn - 1}) / {bn};
  var per_group: uint32 = {group} * tiles_n;
  var first: uint32 = (block.x / per_group) * {group};
  var rows: uint32 = tiles_m - first;
  if (rows > {group}) {{ rows = {group}; }}
  var t: uint32 = block.x % per_group;
  var row: uint32 = (first + t % rows) * {bm};
  var column: uint32 = (t / rows) * {bn};
  tensor_matmul(a, b, c, d, row, column, m, n, k,
                shape: m{bm}n{bn}k64, input_type: {fmt}, {types},
                a_layout: row, b_layout: col, scope: workgroup,
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);
}}
"""


def grid(m: int, n: int, bm: int = BM, bn: int = BN, cluster: int = 2) -> int:
    """Workgroups along x: one per region, rounded up to whole clusters (the sm_90a kernel
    runs in pairs; a spare workgroup's region is out of range and does nothing)."""
    tiles = ((m + bm - 1) // bm) * ((n + bn - 1) // bn)
    return (tiles + cluster - 1) // cluster * cluster


def native_launch(fmt: str = "f16", bm: int = BM, bn: int = BN,
                  out: str = "f32") -> tuple[int, int]:
    """(work-items per workgroup, dynamic shared bytes) of the native sm_90a path."""
    from toolchain.compiler.ir.tensor import TensorDesc
    from toolchain.compiler.targets.ptx.tensor import wgmma
    desc = TensorDesc(bm, bn, 64, fmt, fmt, "f32", out, b_layout="col",
                      scope="workgroup")
    return wgmma.threads(desc), wgmma.shared_bytes(desc)
