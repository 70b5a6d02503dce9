"""Hardware: the auto-staged kernel (cp.async group under -O) gives bitwise the same output as
the unoptimized one (plain loads and stores) and as the numpy reference."""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.opt.gpu_kernels import ASYNC_STAGE as STAGE
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch


@pytest.mark.parametrize("t,np_t", [("float32", np.float32), ("int64", np.int64)])
def test_staged_and_plain_agree(gpu_run, tmp_path, t, np_t):
    path = tmp_path / "k.mettle"
    path.write_text(STAGE.format(t=t, between="", order="acq_rel"))
    blocks, n = 5, 7
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(512 * blocks) * 100).astype(np_t)
    x[x == 0] = 3
    tiles = x.reshape(blocks, 512)
    want = (tiles[:, ::-1] * np_t(n)).ravel()
    got = []
    for optimize in (False, True):
        opts = Options(emit="ptx", gpu_arch=detect_local_arch() or "sm_90a",
                       optimize=optimize, fp_contract=False)
        ptx = compile_file(str(path), opts).data.decode()
        assert ("cp.async" in ptx) == optimize
        poison = np.nan if t == "float32" else -1
        out = gpu_run(ptx, "stage", grid=blocks, block=256, args=[
            Buffer("x", t, data=x), Buffer("y", t, 512 * blocks, poison=poison, output=True),
            Scalar("int32", n)])["y"]
        assert np.array_equal(out, want)
        got.append(out.tobytes())
    assert got[0] == got[1]
