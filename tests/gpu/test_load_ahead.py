"""Hardware: load-ahead (opt/load_ahead.py) under -O.

1. A strided loop that writes the buffer it reads, at element distances d on both sides of
   the run-time no-overlap window (d a multiple of the subgroup width, so each lane reads
   only what it wrote itself): in place, inside the window (the original loop runs), just
   past it (the unrolled group runs). The result must be the sequential one.
2. The row kernels of bench/kernels/plain.mettle (softmax, layer norm: one subgroup per
   row, stores after loads) at widths with partial groups and tails: -O (with the reread
   hint, .L1::evict_last, on the row passes; and with opt/reread.py's STREAM policy, .cs
   on the last pass and the output) gives bitwise the output of the unoptimised compile
   under --fp-contract=off.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.opt import reread
from toolchain.compiler.opt.load_ahead import STORE_FACTOR
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

REPO = Path(__file__).resolve().parents[2]
PLAIN = REPO / "bench" / "kernels" / "plain.mettle"

SHIFT = """\
kernel(block = 32) shift(x: float32*, base: int32, d: int32, n: int32) {
  var src: float32* = x + (int64)base;
  var dst: float32* = src + (int64)d;
  for (var c: int32 = (int32)subgroup_local_id(); c < n; c += (int32)subgroup_size()) {
    dst[c] = src[c] * 2.0 + 1.0;
  }
}
"""


def _ptx(path, **kw) -> str:
    opts = Options(emit="ptx", gpu_arch=detect_local_arch() or "sm_90a", **kw)
    return compile_file(str(path), opts).data.decode()


def _stream_ptx(stream: bool, **kw) -> str:
    """plain.mettle's PTX with opt/reread.py's access policy (last reads and output stores
    evict-first) switched on or off."""
    saved = reread.STREAM
    reread.STREAM = stream
    try:
        return _ptx(PLAIN, **kw)
    finally:
        reread.STREAM = saved


WINDOW = 32 * (STORE_FACTOR - 1)          # elements: 32..WINDOW run the original loop


@pytest.mark.parametrize("d", [0, -32, 32, 64, WINDOW, WINDOW + 32, WINDOW + 64])
def test_overlapping_stores_keep_sequential_results(gpu_run, tmp_path, d):
    path = tmp_path / "shift.mettle"
    path.write_text(SHIFT)
    ptx = _ptx(path, optimize=True)
    base, n = 1024, 32 * 40 + 7                # 40 full rounds of the subgroup and a tail
    size = base + n + WINDOW + 128
    x = np.random.default_rng(7).standard_normal(size).astype(np.float32)
    got = gpu_run(ptx, "shift", grid=1, block=32, args=[
        Buffer("x", "float32", data=x, output=True),
        Scalar("int32", base), Scalar("int32", d), Scalar("int32", n)])["x"]
    want = x.copy()
    for c in range(n):                         # each lane walks its own c upwards
        want[base + c + d] = want[base + c] * np.float32(2.0) + np.float32(1.0)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("cols", [1, 31, 33, 511, 1024, 1041])
def test_row_kernels_bitwise_equal_with_and_without_O(gpu_run, cols):
    rows = 9
    rng = np.random.default_rng(cols)
    x = rng.standard_normal(rows * cols).astype(np.float32)
    gamma = rng.standard_normal(cols).astype(np.float32)
    beta = rng.standard_normal(cols).astype(np.float32)
    grid = (rows + 3) // 4
    outs = {}
    for optimize, stream in ((False, False), (True, False), (True, True)):
        ptx = _stream_ptx(stream, optimize=optimize, fp_contract=False)
        assert ("ld.global.L1::evict_last.f32" in ptx) == optimize   # opt/reread.py's hint
        assert ("ld.global.cs.f32" in ptx and "st.global.cs.f32" in ptx) == stream
        sm = gpu_run(ptx, "softmax_plain", grid=grid, block=128, args=[
            Buffer("x", "float32", data=x), Buffer("y", "float32", rows * cols,
                                                   poison=np.nan, output=True),
            Scalar("int32", rows), Scalar("int32", cols)])["y"]
        ln = gpu_run(ptx, "layernorm_plain", grid=grid, block=128, args=[
            Buffer("x", "float32", data=x), Buffer("y", "float32", rows * cols,
                                                   poison=np.nan, output=True),
            Buffer("gamma", "float32", data=gamma), Buffer("beta", "float32", data=beta),
            Scalar("int32", rows), Scalar("int32", cols), Scalar("float32", 1e-5)])["y"]
        outs[optimize, stream] = (sm, ln)
    for plain, opt, streamed in zip(outs[False, False], outs[True, False], outs[True, True]):
        assert not np.isnan(plain).any()
        assert np.array_equal(plain.view(np.uint32), opt.view(np.uint32))
        assert np.array_equal(plain.view(np.uint32), streamed.view(np.uint32))
