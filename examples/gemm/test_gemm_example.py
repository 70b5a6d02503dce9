"""The GEMM example on a GPU: the host checks 300x520x200 exactly and samples of 4096^3,
then prints its TFLOP/s. Under Pants the packaged host and gemm.ptx are run as built; from
the source tree both are compiled here (sm_90a). Skips where the host reports "no GPU"."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def run_host(exe: Path) -> str:
    proc = subprocess.run([str(exe)], cwd=exe.parent, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode == 2 and proc.stdout.strip() == "no GPU":
        pytest.skip("no GPU: the host's gpu_init() found no CUDA device")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


def test_example_from_source(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for args in (["--build", HERE / "gemm_host.mettle", "-o", tmp_path / "gemm_host"],
                 ["--emit-ptx", "--gpu-arch=sm_90a", HERE / "gemm.mettle", "-o",
                  tmp_path / "gemm.ptx"]):
        proc = subprocess.run([sys.executable, "-m", "toolchain.compiler", *map(str, args)],
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    out = run_host(tmp_path / "gemm_host")
    assert out.startswith("gemm: OK 300x520x200; 4096^3 ") and out.endswith(" TFLOP/s"), out


def test_packaged_example():
    exe = Path.cwd() / "examples" / "gemm" / "gemm_host"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        pytest.skip("not under Pants: no packaged examples/gemm/gemm_host")
    assert run_host(exe).startswith("gemm: OK 300x520x200")
