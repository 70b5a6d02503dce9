"""The default tensor descriptor (LANGUAGE.md §11): A row, B column, C row, D row,
multiply_add, dense, default rounding, wrap, subgroup scope.

Sources here never write a layout option. The descriptor is checked field by field, and
generated PTX relying on the defaults runs on the CPU interpreter (ptx_sim.py) against
the CPU oracle with B stored column-major (B[q, c] at b[c * ldb + q]): the FP8 mma.sync
interior plus replay edges, a forced-replay f16 region, a bf16 region on the portable
profile (which lacks bf16 WMMA, so it is exact replay only) and a whole FP8 tile.
Hardware runs of the same defaults are tests/gpu/test_tensor_defaults.py.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from tests.support import tensor_oracle as O
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir.tensor import TensorDesc

from . import narrow_cases as NC
from .kernels import carrier
from .ptx_sim import Sim

LAYOUTS = ("row", "col", "row", "row")          # what the defaults mean


def default_matmul_source(fmt: str, shape: str, warps: int = 1) -> str:
    """A tensor_matmul grid kernel with no layout option (one region per warp)."""
    m, n = (int(x) for x in shape[1:].split("k")[0].split("n"))
    t = carrier(fmt)
    return (f"kernel mm(a: {t}*, b: {t}*, c: float32*, d: float32*, pm: uint32, pn: uint32,\n"
            "           pk: uint32, lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32) {\n"
            f"  var column: uint32 = (block.x * {warps} + thread.x / 32) * {n};\n"
            f"  tensor_matmul(a, b, c, d, block.y * {m}, column, pm, pn, pk, shape: {shape},\n"
            f"                input_type: {fmt}, output_type: f32,\n"
            "                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);\n}\n")


def ptx_of(src: str, arch: str, budget: int = 0) -> str:
    with tempfile.TemporaryDirectory(prefix="mettle-defaults-") as tmp:
        path = os.path.join(tmp, "k.mettle")
        opts = Options(emit="ptx", gpu_arch=arch, tensor_tuple_budget=budget)
        return compile_file(path, opts, source_text=src).data.decode()


def operands(fmt: str, M: int, N: int, K: int, seed: int):
    """Random non-zero exactly representable A (M x K), B (K x N), C; their stored buffers
    in the default layouts with padded leading dimensions and poisoned padding."""
    rng = np.random.default_rng(seed)
    if fmt in ("e4m3", "e5m2"):
        a, b = NC.fp8_codes(rng, fmt, (M, K)), NC.fp8_codes(rng, fmt, (K, N))
        av, bv = O.decode_array(fmt, a), O.decode_array(fmt, b)
    else:
        a = rng.integers(1, 5, (M, K)) * rng.choice([-1, 1], (M, K))
        b = rng.integers(1, 5, (K, N)) * rng.choice([-1, 1], (K, N))
        av, bv = a.astype(np.float64), b.astype(np.float64)
    c = rng.integers(-8, 8, (M, N)).astype(np.float64)
    bufs = {}
    bufs["a"], lda = NC.stored(fmt, a, LAYOUTS[0], False, 3)
    bufs["b"], ldb = NC.stored(fmt, b, LAYOUTS[1], False, 5)
    bufs["c"], ldc = NC.stored("f32", c, LAYOUTS[2], False, 2)
    bufs["d"], ldd = NC.stored("f32", np.zeros((M, N)), LAYOUTS[3], False, 4)
    bufs["d"][:] = NC.POISON["float32"]
    return bufs, (lda, ldb, ldc, ldd), av @ bv + c


def run_matmul(ptx: str, fmt: str, shape: str, M: int, N: int, K: int, warps: int = 1):
    m, n = (int(x) for x in shape[1:].split("k")[0].split("n"))
    bufs, lds, want = operands(fmt, M, N, K, seed=M * 1000 + N + K)
    poison = bufs["d"].copy()
    sim = Sim(ptx, "mm")
    grid = (-(-N // (n * warps)), -(-M // m))
    mem = sim.run(grid, 32 * warps, [("buf", w, bufs[w]) for w in "abcd"] +
                  [("u32", v) for v in (M, N, K, *lds)])
    NC.check_d(mem.read("d"), want, LAYOUTS[3], lds[3], poison)
    return sim


def test_descriptor_defaults_field_by_field():
    src = ("kernel k(a: uint16*, c: float32*) {\n  tensor_mma(a, a, c, c, shape: m16n16k16, "
           "input_type: f16, output_type: f32);\n}\n")
    module, _ = compile_to_ir("k.mettle", gpu=True, source_text=src)
    (ins,) = [i for f in module.functions.values() for i in f.instructions()
              if i.op == "tensor.mma"]
    d = ins.attrs["desc"]
    assert (d.a_layout, d.b_layout, d.c_layout, d.d_layout) == LAYOUTS
    assert (d.math, d.sparsity, d.rounding, d.overflow, d.scope) == \
        ("multiply_add", "dense", "default", "wrap", "subgroup")
    assert (d.a_scale_mode, d.b_scale_mode, d.a_packing, d.transpose_b) == \
        ("none", "none", "logical", False)
    # the IR-level default (public builders) is the same descriptor
    assert TensorDesc(16, 16, 16, "f16", "f16", "f32", "f32") == \
        TensorDesc(16, 16, 16, "f16", "f16", "f32", "f32", a_layout="row", b_layout="col",
                   c_layout="row", d_layout="row")


def test_fp8_region_defaults_native_interior_and_edges():
    src = default_matmul_source("e4m3", "m16n8k32", warps=2)
    sim = run_matmul(ptx_of(src, "sm_90a"), "e4m3", "m16n8k32", 35, 29, 70, warps=2)
    assert sim.mmas > 0                        # the interior ran native mma.sync


def test_f16_region_defaults_forced_replay():
    src = default_matmul_source("f16", "m16n16k16")
    ptx = ptx_of(src, "sm_90a", budget=1)
    assert "wmma" not in ptx
    run_matmul(ptx, "f16", "m16n16k16", 19, 23, 21)


def test_bf16_region_defaults_replay_on_portable():
    ptx = ptx_of(default_matmul_source("bf16", "m16n16k16"), "portable")
    assert ".target compute_75" in ptx and "wmma" not in ptx
    run_matmul(ptx, "bf16", "m16n16k16", 18, 17, 19)


def run_tile(fmt: str, shape: str, options: str, arch: str, block: int = 32) -> str:
    """A whole tensor_mma tile with `options` (and runtime strides) on the interpreter
    against the oracle, in the default layouts; returns the PTX."""
    m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
    bufs, lds, want = operands(fmt, m, n, k, seed=m + n + k)
    t = carrier(fmt)
    src = (f"kernel tile(a: {t}*, b: {t}*, c: float32*, d: float32*, lda: uint32,\n"
           "             ldb: uint32, ldc: uint32, ldd: uint32) {\n"
           f"  tensor_mma(a, b, c, d, shape: {shape}, input_type: {fmt}, output_type: f32,\n"
           f"             {options}lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);\n}}\n")
    ptx = ptx_of(src, arch)
    poison = bufs["d"].copy()
    mem = Sim(ptx, "tile").run(
        (1,), block, [("buf", w, bufs[w]) for w in "abcd"] + [("u32", v) for v in lds])
    NC.check_d(mem.read("d"), want, "row", lds[3], poison)
    return ptx


@pytest.mark.parametrize("explicit", ["", "a_layout: row, b_layout: col, c_layout: row, "
                                          "d_layout: row, math: multiply_add, sparsity: "
                                          "dense, rounding: default, overflow: wrap, "
                                          "scope: subgroup, "])
def test_whole_fp8_tile_defaults_equal_the_explicit_descriptor(explicit):
    assert "mma.sync" in run_tile("e4m3", "m16n8k32", explicit, "sm_90a")


@pytest.mark.parametrize("scope,block", [("subgroup", 32), ("workgroup", 96)])
def test_whole_bf16_tile_replays_on_portable(scope, block):
    """bf16 WMMA needs sm_80, so the portable profile replays the whole tile exactly."""
    assert "wmma" not in run_tile("bf16", "m32n16k48", f"scope: {scope}, ", "portable", block)
