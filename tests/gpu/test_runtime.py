"""The Python runtime (`import mettle`) on a CUDA GPU: typed launches from torch, CuPy and
NumPy data, two streams overlapping, a packaged artifact launched typed, asynchronous
launches, driver errors naming the kernel, kernel facts and bench. Marked `gpu` and skipped
without a device by tests/gpu/conftest.py.

These launch in the pytest process (the runtime's point); each kernel here is well formed.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mettle

ROOT = Path(__file__).resolve().parents[2]
VADD = """kernel vadd(a: float32*, b: float32*, c: float32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { c[i] = a[i] + b[i]; }
}
"""
# One thread per block spinning `iters` dependent steps: slow enough to see overlap.
SPIN = """kernel spin(x: float32*, iters: int32) {
    var v: float32 = x[block.x];
    for j in 0..iters { v = v * 0.999999 + 0.5; }
    x[block.x] = v;
}
"""
N = 1 << 20


@pytest.fixture(scope="module")
def vadd():
    return mettle.compile(VADD)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("METTLE_CACHE_DIR", str(tmp_path / "cache"))


def grid(n: int, block: int = 256) -> int:
    return (n + block - 1) // block


def test_numpy_data_through_device_arrays(vadd):
    a = np.random.default_rng(1).random(N, dtype=np.float32)
    b = np.random.default_rng(2).random(N, dtype=np.float32)
    da, db, dc = mettle.to_device(a), mettle.to_device(b), mettle.empty(N, "float32")
    vadd.vadd[grid(N), 256](da, db, dc, N)
    np.testing.assert_array_equal(dc.numpy(), a + b)


def test_torch_tensors_on_torchs_stream(vadd):
    torch = pytest.importorskip("torch")
    a, b = torch.rand(N, device="cuda"), torch.rand(N, device="cuda")
    c = torch.empty(N, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())   # a and b are written on the default one
    with torch.cuda.stream(side):              # launched on torch's current stream: side
        vadd.vadd[grid(N), 256](a, b, c, N)
    side.synchronize()
    assert torch.equal(c, a + b)
    with pytest.raises(TypeError, match=r"parameter 2 `c` \(float32\*\): expected an array "
                       "of float32, got float16"):
        vadd.vadd[grid(N), 256](a, b, c.half(), N)
    with pytest.raises(ValueError, match="host memory|not device memory"):
        vadd.vadd[grid(N), 256](a, b, c.cpu(), N)


def test_cupy_arrays(vadd):
    cupy = pytest.importorskip("cupy")
    a, b = cupy.random.rand(N, dtype=cupy.float32), cupy.random.rand(N, dtype=cupy.float32)
    c = cupy.empty(N, dtype=cupy.float32)
    vadd.vadd[grid(N), 256](a, b, c, N, stream=cupy.cuda.get_current_stream())
    cupy.cuda.get_current_stream().synchronize()
    assert bool((c == a + b).all())


def test_numba_device_arrays(vadd):
    cuda = pytest.importorskip("numba.cuda")
    a = np.arange(N, dtype=np.float32)
    da, dc = cuda.to_device(a), cuda.device_array(N, dtype=np.float32)
    vadd.vadd[grid(N), 256](da, da, dc, N)
    mettle.synchronize()
    np.testing.assert_array_equal(dc.copy_to_host(), 2 * a)


def test_jax_arrays_as_inputs(vadd, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax sees no GPU")
    a = np.arange(N, dtype=np.float32)
    ja = jax.device_put(a, jax.devices("gpu")[0])
    ja.block_until_ready()
    c = mettle.empty(N, "float32")
    vadd.vadd[grid(N), 256](ja, ja, c, N)
    np.testing.assert_array_equal(c.numpy(), 2 * a)


MEET = """kernel meet(flags: uint32*, seen: uint32*, me: uint32, bound: uint32) {
    atomic_store(flags, me, 1);
    var saw: uint32 = 0;
    var j: uint32 = 0;
    while (j < bound && saw == 0) {
        saw = atomic_load(flags, 1 - me);
        j = j + 1;
    }
    seen[me] = saw;
}
"""


def test_two_streams_overlap():
    # Each kernel raises its flag, then looks for the other's a bounded number of times.
    # Only kernels that run at the same time can see each other: on one stream the first
    # finishes before the second starts; on two streams both see. (Not timed: elapsed
    # times failed this test when other processes shared the GPU.)
    meet = mettle.compile(MEET).meet[1, 1]
    bound = 1 << 18

    def seen(streams) -> list[int]:
        flags, out = mettle.zeros(2, "uint32"), mettle.zeros(2, "uint32")
        for me, s in enumerate(streams):
            meet(flags, out, me, bound, stream=s)
        mettle.synchronize()
        return out.numpy().tolist()
    one, two = mettle.Stream(), mettle.Stream()
    assert seen([one, one]) == [0, 1]
    assert seen([one, two]) == [1, 1]


def test_launches_are_asynchronous():
    import time
    mod = mettle.compile(SPIN)
    x = mettle.zeros(1)
    mod.spin[1, 1](x, 10)
    mettle.synchronize()
    start = mettle.Event().record()
    t0 = time.perf_counter()
    mod.spin[1, 1](x, 4_000_000)
    host_ms = (time.perf_counter() - t0) * 1e3
    end = mettle.Event().record()
    assert host_ms < 0.25 * start.elapsed_ms(end)


def test_a_packaged_artifact_launches_typed(tmp_path):
    (tmp_path / "k.mettle").write_text(VADD)
    arch = "sm_{}{}".format(*mettle.device(0).compute_capability)
    proc = subprocess.run([sys.executable, "-m", "mettle.compiler", "--emit-ptx", "k.mettle",
                           "-o", "k.ptx", f"--gpu-arch={arch}", "--emit-signature",
                           "k.ptx.sig.json"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    mod = mettle.load(tmp_path / "k.ptx")
    a = mettle.to_device(np.arange(1000, dtype=np.float32))
    c = mettle.empty(1000, "float32")
    mod.vadd[4, 256](a, a, c, 1000)
    np.testing.assert_array_equal(c.numpy(), 2 * np.arange(1000, dtype=np.float32))
    with pytest.raises(ValueError, match=r"kernel vadd: parameter 3 `n` \(int32\): "
                       "4294967296 is out of range"):
        mod.vadd[4, 256](a, a, c, 1 << 32)


def test_driver_errors_name_the_kernel(vadd):
    a = mettle.zeros(4)
    with pytest.raises(mettle.LaunchError, match="kernel vadd: cuLaunchKernel failed: "
                       "CUDA_ERROR_INVALID_VALUE"):
        vadd.vadd[1, 2048](a, a, a, 4)          # more threads than a block may have


def test_kernel_facts_and_bench(vadd):
    k = vadd.vadd
    facts = (k.registers, k.local_bytes, k.occupancy(256))
    assert 0 < facts[0] <= 255 and facts[1] == 0 and 1 <= facts[2] <= 32, facts
    log = k.module.backend().module.info_log
    assert k.spills == {"stack": 0, "spill_stores": 0, "spill_loads": 0}, log[-2000:]
    a = mettle.zeros(N)
    timing = mettle.bench(lambda: k[grid(N), 256](a, a, a, N), rep=20, flush_l2=True)
    assert len(timing.samples) == 20 and 0 < timing.median_ms < 100
