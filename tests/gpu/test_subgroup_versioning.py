"""Hardware: a loop striding by subgroup_size() in a kernel without a declared block is
versioned under -O (a 32-lane copy and the exact one); launches with full and with partial
subgroups (80 threads: the third subgroup has 16 lanes) must give the row sums, with and
without -O."""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.opt.gpu_kernels import SUBGROUP_WIDTH as SRC
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("block", [128, 80])
def test_row_sums_with_full_and_partial_subgroups(gpu_run, tmp_path, optimize, block):
    path = tmp_path / "k.mettle"
    path.write_text(SRC.format(shape=""))
    ptx = compile_file(str(path), Options(emit="ptx", gpu_arch=detect_local_arch() or "sm_90a",
                                          optimize=optimize)).data.decode()
    rows, cols = 37, 301
    rows_per_block = (block + 31) // 32        # the kernel maps 4 rows per block index
    grid = (rows + 3) // 4
    rng = np.random.default_rng(block + optimize)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = gpu_run(ptx, "rowsum", grid=grid, block=block, args=[
        Buffer("x", "float32", data=x.ravel()),
        Buffer("y", "float32", rows, poison=np.nan, output=True),
        Scalar("int32", rows), Scalar("int32", cols)])["y"]
    want = x.astype(np.float64).sum(axis=1)
    # rows whose subgroup exists in this launch shape (4 rows per block index, but only
    # rows_per_block subgroups run per block): the others keep their poison
    ran = np.array([(r % 4) < rows_per_block for r in range(rows)])
    assert np.allclose(out[ran], want[ran], rtol=1e-4, atol=1e-4)
    assert np.isnan(out[~ran]).all()
