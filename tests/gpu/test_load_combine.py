"""Hardware: workgroup arrays written and read through combined vector accesses under -O
(st/ld.shared.v4.f32 and .v2.f64, opt/load_combine.py) give bitwise the same output as the
unoptimized kernel (scalar accesses) and as the numpy reference."""
from __future__ import annotations

import numpy as np

from tests.gpu.harness import Buffer
from tests.opt.gpu_kernels import LOAD_COMBINE as SOURCE
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch


def test_combined_and_plain_agree(gpu_run, tmp_path):
    path = tmp_path / "lc.mettle"
    path.write_text(SOURCE)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(64).astype(np.float32)
    a = x.copy()
    r = a[::-1]                                # thread i reads thread 63 - i's values
    want_x = ((r + r * np.float32(2)) + r * np.float32(3)) + r * np.float32(4)
    want_y = r.astype(np.float64) + (r.astype(np.float64) + 1.0)
    got = []
    for optimize in (False, True):
        opts = Options(emit="ptx", gpu_arch=detect_local_arch() or "sm_90a",
                       optimize=optimize, fp_contract=False)
        ptx = compile_file(str(path), opts).data.decode()
        assert ("ld.shared.v4.f32" in ptx) == optimize
        out = gpu_run(ptx, "lc", grid=1, block=64, args=[
            Buffer("x", "float32", data=x, output=True),
            Buffer("y", "float64", 64, poison=np.nan, output=True)])
        assert np.array_equal(out["x"], want_x)
        assert np.array_equal(out["y"], want_y)
        got.append((out["x"].tobytes(), out["y"].tobytes()))
    assert got[0] == got[1]
