"""Tile values on SPIR-V, executed by PoCL (real OpenCL, in the trixie root): the replay
kernels of test_tile_replay.py bit for bit against the same oracle (no exp2 there), the
softmax/matmul chain within OpenCL's exp2 accuracy, and the attention example at its real
tile sizes (d 64 and 128, f16 and bf16, causal and full, ragged n) against the float64
oracle. Skips with the reason where the OpenCL runtime is missing."""
from __future__ import annotations


import numpy as np
import pytest

from examples.attention.attention import SOURCE, block_rows, constants, reference
from tests.support.opencl import Buf, Scalar, opencl_available, run_spirv_kernel
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

from .test_tile_attention import TOL, from_bits, to_bits
from .test_tile_replay import ATTN_LIKE, COLUMNS, attn_like_oracle, column_oracle


@pytest.fixture(scope="module", autouse=True)
def _runtime():
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)


def spirv(tmp_path, source: str | None = None, path=None, consts=()) -> bytes:
    if path is None:
        path = tmp_path / "k.mettle"
        path.write_text(source)
    return compile_file(str(path), Options(emit="spirv", optimize=True,
                                           consts=tuple(consts))).data


def test_column_kernel_is_bit_exact_on_opencl(tmp_path):
    x = column_input()
    out = run_spirv_kernel(spirv(tmp_path, COLUMNS), "k2", [384], [384], [
        Buf(x.ravel()), Buf(np.zeros(16 * 80, np.float32), out=True),
        Buf(np.zeros(80, np.float32), out=True),
        Buf(np.zeros(16 * 80, np.uint16), "uint16", out=True)])
    z, cs, bf = column_oracle(x)
    np.testing.assert_array_equal(np.frombuffer(out[1], np.float32).reshape(16, 80).view(
        np.uint32), z.view(np.uint32))
    np.testing.assert_array_equal(np.frombuffer(out[2], np.float32).view(np.uint32),
                                  cs.view(np.uint32))
    np.testing.assert_array_equal(np.frombuffer(out[3], np.uint16).reshape(16, 80), bf)


def column_input():
    from .test_tile_replay import column_input as make
    return make()


def test_softmax_matmul_chain_within_opencl_exp2_accuracy(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.integers(-4, 4, (32, 32)).astype(np.float32)
    y = rng.integers(-3, 4, (32, 32)).astype(np.float16).view(np.uint16)
    n = 30
    out = run_spirv_kernel(spirv(tmp_path, ATTN_LIKE), "k", [128], [128], [
        Buf(x.ravel()), Buf(y.ravel(), "uint16"), Buf(np.zeros(32 * 32, np.float32), out=True),
        Scalar(n, "uint32")])
    got = np.frombuffer(out[2], np.float32).reshape(32, 32)
    want = attn_like_oracle(x, y, n)
    np.testing.assert_allclose(got[:n], want[:n], rtol=1e-5, atol=1e-5)
    assert not got[n:].any()                      # rows past n are never written


@pytest.mark.parametrize("d,fmt,causal,n", [(64, "f16", False, 300), (64, "bf16", True, 129),
                                            (128, "f16", True, 200), (128, "bf16", False, 1)])
def test_attention_example_on_opencl_matches_the_float64_oracle(tmp_path, d, fmt, causal, n):
    bh = 2
    rng = np.random.default_rng(d + n)
    q, k, v = (to_bits(rng.uniform(-1, 1, (bh, n, d)), fmt) for _ in range(3))
    scale = d ** -0.5
    module = spirv(tmp_path, path=SOURCE, consts=(("HEAD_DIM", str(d)), ("ELEM", fmt)))
    # the workgroup's size and rows as the source declares them (kernel(block = WORK_ITEMS),
    # BLOCK_M), read by the launcher's const reader
    width = constants({"HEAD_DIM": d, "ELEM": fmt})["WORK_ITEMS"]
    blocks = -(-n // block_rows({"HEAD_DIM": d, "ELEM": fmt})[0])
    out = run_spirv_kernel(module, "attention", [width * blocks, bh], [width, 1], [
        Buf(q.ravel(), "uint16"), Buf(k.ravel(), "uint16"), Buf(v.ravel(), "uint16"),
        Buf(np.zeros(bh * n * d, np.uint16), "uint16", out=True), Scalar(n, "uint32"),
        Scalar(scale, "float32"), Scalar(int(causal), "uint32")])
    got = from_bits(np.frombuffer(out[3], np.uint16).reshape(bh, n, d), fmt)
    want = reference(from_bits(q, fmt), from_bits(k, fmt), from_bits(v, fmt), causal, scale)
    assert np.abs(got - want).max() <= TOL[fmt], np.abs(got - want).max()
