"""The attention example (examples/attention/attention.mettle) under the tile replay on the
CPU PTX interpreter, against the float64 oracle: ragged n, causal and full, f16 and bf16.
The kernel is the example's own source with small tiles (--const BLOCK_M/BLOCK_N/HEAD_DIM
= 16) and a 128-work-item block (a third of the interpreter's work), so a case takes
seconds to a minute; the replay's result does not depend on the block size."""
from __future__ import annotations

import numpy as np
import pytest

from examples.attention.attention import SOURCE, reference
from toolchain.compiler.driver import compile_file
from tests.support.gpu_opt_mode import options

from .tile_sim import run_tiles

DTYPES = {"f16": np.float16}
TOL = {"f16": 4e-3, "bf16": 3e-2}      # P and O rounded to the format; exp2 within 2 ulp


WORK_ITEMS = 128


def compile_variant(tmp_path, fmt: str, d: int, block: int, arch: str = "sm_80"):
    opts = options(emit="ptx", gpu_arch=arch, optimize=True,
                   consts=(("HEAD_DIM", str(d)), ("ELEM", fmt), ("BLOCK_M", str(block)),
                           ("BLOCK_N", str(block)), ("WORK_ITEMS", str(WORK_ITEMS))))
    return compile_file(str(SOURCE), opts).objects


def to_bits(x: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "f16":
        return x.astype(np.float16).view(np.uint16)
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bits(b: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "f16":
        return b.view(np.float16).astype(np.float64)
    return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("fmt,n,causal,bh", [("f16", 13, True, 2), ("bf16", 20, False, 1)])
def test_attention_example_matches_the_float64_oracle(tmp_path, fmt, n, causal, bh):
    d, block = 16, 16
    rng = np.random.default_rng(n * 7 + causal)
    q, k, v = (to_bits(rng.uniform(-1, 1, (bh, n, d)), fmt) for _ in range(3))
    scale = d ** -0.5
    objects = compile_variant(tmp_path, fmt, d, block)
    mem = run_tiles(objects, "attention", WORK_ITEMS, [
        ("buf", "q", q.ravel()), ("buf", "k", k.ravel()), ("buf", "v", v.ravel()),
        ("buf", "o", np.zeros(bh * n * d, np.uint16)), ("u32", n),
        ("u32", int(np.float32(scale).view(np.uint32))), ("u32", int(causal))],
        grid=(-(-n // block), bh, 1))
    got = from_bits(mem.read("o").reshape(bh, n, d), fmt)
    want = reference(from_bits(q, fmt), from_bits(k, fmt), from_bits(v, fmt), causal, scale)
    assert np.abs(got - want).max() <= TOL[fmt], np.abs(got - want).max()

