"""The GEMM example's host against the logging fake CUDA driver (no GPU needed): `dispatch`
raises the kernel's dynamic shared memory limit (std/gpu's launch) and launches one
workgroup of 384 work-items per 128 x 256 region, at most 132 (the persistent kernel's
grid), with the pipeline's shared bytes and the source's 11 arguments. The fake computes nothing, so the host's own check fails (exit 1):
this test reads the driver log only."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolchain.compiler.ir.tensor import TensorDesc
from toolchain.compiler.targets.ptx.tensor import wgmma
from toolchain.providers.cuda.fake import build as fake_build

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.mark.skipif(fake_build.compiler() is None, reason="no C compiler for the fake driver")
def test_host_opts_in_and_dispatches_the_pipeline_launch(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "toolchain.compiler", "--build",
                           str(HERE / "gemm_host.mettle"), "-o", str(tmp_path / "host")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "gemm.ptx").write_text(".version 8.0\n.target sm_90a\n.address_size 64\n"
                                       ".visible .entry gemm() { ret; }\n")
    log = tmp_path / "calls.log"
    fake = fake_build.build(tmp_path / "fake")
    subprocess.run([str(tmp_path / "host")], cwd=tmp_path, capture_output=True, timeout=300,
                   env={**os.environ, "METTLE_CUDA_DRIVER": str(fake),
                        "METTLE_FAKE_CUDA_LOG": str(log)})
    text = log.read_text()
    desc = TensorDesc(128, 256, 64, "f16", "f16", "f32", "f32", b_layout="col",
                      scope="workgroup", persistent=8, schedule="auto")
    threads, shared = wgmma.threads(desc), wgmma.shared_bytes(desc)
    opt_in = text.index("cuFuncSetAttribute hfunc=")
    assert f"attrib=8 value={shared}" in text[opt_in:].splitlines()[0]
    launch = re.search(r"cuLaunchKernel .*", text[opt_in:]).group(0)
    # 300 x 520: 3 x 3 regions
    assert f"gx=9 gy=1 gz=1 bx={threads} by=1 bz=1 shared={shared} " in launch, launch
