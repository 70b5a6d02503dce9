"""The example app on a GPU: each host prints OK, and both GEMM variants compute D exactly,
from the Mettle hosts and from Python through the runtime (`import mettle`: the app's
kernels compiled in process or loaded as packaged, launched typed on NumPy data).

Under Pants (`./pants --tag=gpu test app::`) the packaged outputs (runtime package
dependencies: app/host + kernels.ptx, app/gemm_host + the selected gemm.ptx) are run as
built. From the source tree (`python3 -m pytest app/test_gemm_app.py`, e.g. on a GPU
machine without Pants) the hosts and both variants are compiled here with
`python3 -m toolchain.compiler` for the local GPU. Skips where a host reports "no GPU".
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

APP = Path(__file__).resolve().parent
ROOT = APP.parent
VARIANTS = (0, 8)          # tensor_tuple_budget values of app/BUILD's gpu_variant_select


def mettle(*args) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "toolchain.compiler", *map(str, args)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def run_host(exe: Path) -> str:
    proc = subprocess.run([str(exe)], cwd=exe.parent, capture_output=True, text=True,
                          timeout=300)
    if proc.returncode == 2 and proc.stdout.strip() == "no GPU":
        pytest.skip("no GPU: the host's gpu_init() found no CUDA device")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


def packaged(name: str) -> Path | None:
    """The Pants-built executable in this sandbox (runtime package dependency), if any."""
    exe = Path.cwd() / "app" / name
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


@pytest.mark.skipif(packaged("host") is None, reason="not under Pants: no packaged app/host")
def test_packaged_hosts_print_ok():
    assert run_host(packaged("host")) == "vadd: OK 1048576 elements"
    assert run_host(packaged("gemm_host")) == "gemm: OK 256x192x128"
    assert (Path.cwd() / "app" / "gemm.selection.json").is_file()


def test_vadd_from_source(tmp_path):
    mettle("--build", APP / "host.mettle", "-o", tmp_path / "host")
    mettle("--emit-ptx", APP / "kernels.mettle", "-o", tmp_path / "kernels.ptx")
    assert run_host(tmp_path / "host") == "vadd: OK 1048576 elements"


@pytest.mark.parametrize("budget", VARIANTS)
def test_each_gemm_variant_from_source(tmp_path, budget):
    mettle("--build", APP / "gemm_host.mettle", "-o", tmp_path / "gemm_host")
    mettle("--emit-ptx", f"--gpu-tensor-tuple-budget={budget}", APP / "gemm.mettle",
           "-o", tmp_path / "gemm.ptx")
    assert run_host(tmp_path / "gemm_host") == "gemm: OK 256x192x128"


def _device_or_skip():
    import mettle
    from mettle.providers.cuda import driver  # pants: no-infer-dep
    reason = driver.probe()
    if reason is not None:
        pytest.skip(f"no GPU: {reason}")
    return mettle


def _vadd_through(mod) -> None:
    mettle = _device_or_skip()
    import numpy as np
    n = 1 << 20
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.25, np.float32)
    c = mettle.empty(n, "float32")
    mod.vadd[(n + 255) // 256, 256](mettle.to_device(a), mettle.to_device(b), c, n)
    np.testing.assert_array_equal(c.numpy(), a + b)


def test_vadd_kernel_through_the_runtime(tmp_path, monkeypatch):
    mettle = _device_or_skip()
    monkeypatch.setenv("METTLE_CACHE_DIR", str(tmp_path / "cache"))
    _vadd_through(mettle.compile(APP / "kernels.mettle"))


@pytest.mark.skipif(packaged("host") is None, reason="not under Pants: no packaged app/host")
def test_packaged_kernels_load_typed():
    """The mettle_kernel output (kernels.ptx and its signature sidecar) as shipped."""
    mettle = _device_or_skip()
    _vadd_through(mettle.load(Path.cwd() / "app" / "kernels.ptx"))


@pytest.mark.parametrize("budget", VARIANTS)
def test_each_gemm_variant_through_the_runtime(tmp_path, monkeypatch, budget):
    """gemm_host's check from Python: f16 bit patterns of 0..3, exact f32 sums."""
    mettle = _device_or_skip()
    import numpy as np
    monkeypatch.setenv("METTLE_CACHE_DIR", str(tmp_path / "cache"))
    mod = mettle.compile(APP / "gemm.mettle", arch="sm_90a", opt=False,
                         tensor_tuple_budget=budget)
    m, n, k = 256, 192, 128
    a = ((np.arange(m * k) * 7 + np.arange(m * k) // k) % 4).astype(np.float16)
    b = ((np.arange(k * n) * 5 + 1) % 3).astype(np.float16)
    c = (np.arange(m * n) % 5).astype(np.float32)
    d = mettle.to_device(np.full(m * n, -1.0, np.float32))
    mod.gemm[((n + 63) // 64, (m + 63) // 64, 1), 32](
        mettle.to_device(a), mettle.to_device(b), mettle.to_device(c), d, m, n, k, k, n, n, n)
    want = c.reshape(m, n) + a.reshape(m, k).astype(np.float32) @ b.reshape(k, n).astype(
        np.float32)
    np.testing.assert_array_equal(d.numpy().reshape(m, n), want)


def test_hosts_without_a_gpu_say_so(tmp_path):
    """Runs everywhere: with no CUDA driver to open, a host exits 2 and says "no GPU"."""
    mettle("--build", APP / "gemm_host.mettle", "-o", tmp_path / "gemm_host")
    env = dict(os.environ, METTLE_CUDA_DRIVER=str(tmp_path / "no-such-libcuda.so"))
    proc = subprocess.run([str(tmp_path / "gemm_host")], env=env, capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (2, "no GPU")
