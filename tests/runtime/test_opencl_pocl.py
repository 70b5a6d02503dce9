"""mettle on OpenCL: `mettle.compile(..., target="spirv")` and `mettle.load("x.spv")` launch
on NumPy arrays with the CUDA call syntax, on PoCL inside the trixie root (tools/
opencl_root.py; skipped, with the reason, where the root is not bootstrapped)."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

import mettle  # noqa: F401  the script below runs it inside the root: a build dependency
from tools.opencl_root import opencl_available, run_in_root, trixie_root

SCRIPT = r'''
import json, subprocess, sys
import numpy as np
import mettle

SOURCE = """kernel vadd(a: float32*, b: float32*, c: float32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { c[i] = a[i] + b[i]; }
}
kernel scale(x: int64*, n: uint32, f: int64) {
    var i: uint32 = block.x * block_dim.x + thread.x;
    if (i < n) { x[i] = x[i] * f; }
}
"""
out = {}
mod = mettle.compile(SOURCE, target="spirv")
n = 1000
a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
c = np.zeros(n, np.float32)
mod.vadd[(n + 63) // 64, 64](a, b, c, n)
out["vadd"] = bool(np.array_equal(c, a + b))
x = np.arange(70, dtype=np.int64) - 35
mod.scale.launch(x, 70, -3, grid=(3, 1), block=(32, 1, 1))
out["scale"] = bool(np.array_equal(x, (np.arange(70) - 35) * -3))
out["cached"] = mettle.compile(SOURCE, target="spirv").cache_hit

def error(call):
    try:
        call()
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
out["errors"] = [
    error(lambda: mod.vadd[1, 64](a, b, c)),
    error(lambda: mod.vadd[1, 64](a, b, c.astype(np.float64), n)),
    error(lambda: mod.vadd[1, 64](a, b, c[::2], n)),
    error(lambda: mod.vadd[1, 64](a, b, c, 2 ** 31)),
    error(lambda: mod.vadd[1, 64](a, b, c, n, stream=0)),
]
with open(sys.argv[1] + "/k.mettle", "w") as f:
    f.write(SOURCE)
subprocess.run([sys.executable, "-m", "mettle.compiler", "--emit-spirv",
                sys.argv[1] + "/k.mettle", "-o", sys.argv[1] + "/k.spv",
                "--emit-signature", sys.argv[1] + "/k.spv.sig.json"], check=True)
loaded = mettle.load(sys.argv[1] + "/k.spv")
c2 = np.zeros(n, np.float32)
loaded.vadd[(n + 63) // 64, 64](a, b, c2, n)
out["loaded"] = bool(np.array_equal(c2, a + b))
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def pocl_results():
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)
    with tempfile.TemporaryDirectory(dir=trixie_root() / "tmp") as tmp:
        (Path(tmp) / "script.py").write_text(SCRIPT)
        inside = f"/tmp/{Path(tmp).name}"
        proc = run_in_root(f"PYTHONPATH=/mnt/repo METTLE_CACHE_DIR={inside}/cache python3 "
                           f"{inside}/script.py "
                           f"{inside}", timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])


def test_compiled_spirv_launches_on_numpy_arrays(pocl_results):
    assert pocl_results["vadd"] is True and pocl_results["scale"] is True
    assert pocl_results["cached"] is True


def test_a_packaged_spirv_artifact_launches_typed(pocl_results):
    assert pocl_results["loaded"] is True


def test_opencl_launches_check_like_cuda(pocl_results):
    head = "kernel vadd: parameter "
    assert pocl_results["errors"] == [
        "TypeError: kernel vadd takes 4 arguments (a, b, c, n), got 3",
        f"TypeError: {head}2 `c` (float32*): expected an array of float32, got float64",
        f"ValueError: {head}2 `c` (float32*): the array is not C-contiguous: pass "
        "numpy.ascontiguousarray(...)",
        f"ValueError: {head}3 `n` (int32): 2147483648 is out of range for int32 "
        "(-2147483648..2147483647)",
        "ValueError: kernel vadd: OpenCL launches take no stream (they are synchronous)",
    ]
