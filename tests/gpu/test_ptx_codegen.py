"""Hardware: the PTX backend's own code-shape decisions never change results.

Each kernel is compiled twice with `--fp-contract=off`: once as the backend emits it
(positive loop exits on inverse compares, `not.pred` folded, subgroup_size() as the
constant 32 under a full block) and once with those rewrites switched off (the pre-issue-18
shapes). Outputs must be bitwise identical, NaN inputs included (the float inverse compares
are the unordered ones). With contraction on, results match float64 within rounding."""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.ptx.source import compile_source
from toolchain.compiler.targets.ptx import emitter, peephole
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

LOOPS = """
kernel(block = 128) halvings(x: float32*, out: int32*, n: int32, limit: float32) {
  var i: int32 = (int32)(block.x * block_dim.x + thread.x);
  if (i >= n) { return; }
  var v: float32 = x[i];
  var steps: int32 = 0;
  while (v > limit && steps < 200) { v = v * 0.5; steps = steps + 1; }
  var done: bool = steps >= 3;
  while (!done) { steps = steps + 100; done = true; }
  out[i] = steps;
}

kernel(block = 128) row_sum(x: float32*, y: float32*, rows: int32, cols: int32) {
  var row: int32 = (int32)(block.x * 4 + thread.x / 32);
  if (row >= rows) { return; }
  var lane: int32 = (int32)subgroup_local_id();
  var xr: float32* = x + (int64)row * (int64)cols;
  var s: float32 = 0.0;
  for (var c: int32 = lane; c < cols; c += (int32)subgroup_size()) {
    s = s + xr[c] * xr[c];
  }
  s = subgroup_reduce_add(s);
  if (lane == 0) { y[row] = s; }
}
"""


def _ptx(rewrites: bool, contract: bool, monkeypatch) -> str:
    with monkeypatch.context() as m:
        if not rewrites:
            m.setattr(peephole, "run", lambda body, keep=(): body)
            m.setattr(emitter.ModuleEmitter, "full_subgroups", lambda self, fn: False)
        return compile_source(LOOPS, detect_local_arch() or "sm_90a",
                              fp_contract=contract).data.decode()


def _halvings(gpu_run, ptx, x):
    n = x.size
    return gpu_run(ptx, "halvings", grid=(n + 127) // 128, block=128, args=[
        Buffer("x", "float32", data=x), Buffer("out", "int32", n, poison=-1, output=True),
        Scalar("int32", n), Scalar("float32", 1.0)])["out"]


def _row_sum(gpu_run, ptx, x):
    rows, cols = x.shape
    return gpu_run(ptx, "row_sum", grid=(rows + 3) // 4, block=128, args=[
        Buffer("x", "float32", data=x.ravel()),
        Buffer("y", "float32", rows, poison=np.nan, output=True),
        Scalar("int32", rows), Scalar("int32", cols)])["y"]


def test_rewritten_exits_and_constant_width_give_identical_bits(gpu_run, monkeypatch):
    new, old = _ptx(True, False, monkeypatch), _ptx(False, False, monkeypatch)
    assert new != old
    x = np.array([np.nan, -np.nan, -1.0, 0.5, 1.0, 3.0, 1000.0, np.inf, 1e30, 2.5] * 40,
                 dtype=np.float32)
    got, want = _halvings(gpu_run, new, x), _halvings(gpu_run, old, x)
    np.testing.assert_array_equal(got, want)
    assert got[0] == 100 and got[7] == 200       # NaN never enters; inf stops at the cap
    rows = np.random.default_rng(18).standard_normal((37, 301)).astype(np.float32)
    rows[5, 7] = np.nan
    a, b = _row_sum(gpu_run, new, rows), _row_sum(gpu_run, old, rows)
    assert a.view(np.uint32).tolist() == b.view(np.uint32).tolist()


@pytest.mark.parametrize("contract", [True, False])
def test_row_sums_match_float64(gpu_run, monkeypatch, contract):
    rows = np.random.default_rng(7).standard_normal((64, 1000)).astype(np.float32)
    got = _row_sum(gpu_run, _ptx(True, contract, monkeypatch), rows)
    want = (rows.astype(np.float64) ** 2).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
