"""Compile Mettle source text in-process for the PTX tests (text and instruction objects),
and read SASS back with the nvdisasm of the CUDA wheels (tests that need it skip without)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from toolchain.compiler.driver import Options, Result, compile_file


def compile_source(source: str, arch: str = "sm_90a", **options) -> Result:
    """`source` compiled to PTX for `arch`; `options` are driver Options fields."""
    with tempfile.TemporaryDirectory(prefix="mettle-ptx-") as tmp:
        path = os.path.join(tmp, "kernel.mettle")
        Path(path).write_text(source, encoding="utf-8")
        return compile_file(path, Options(emit="ptx", gpu_arch=arch, **options),
                            source_text=source)


def ptx_of(source: str, arch: str = "sm_90a", **options) -> str:
    return compile_source(source, arch, **options).data.decode()


def find_nvdisasm(ptxas_path: str) -> str | None:
    """nvdisasm beside the wheel's ptxas (nvidia-cuda-nvdisasm installs into the same
    nvidia/cu13/bin), else on PATH."""
    beside = Path(ptxas_path).with_name("nvdisasm")
    return str(beside) if beside.is_file() else shutil.which("nvdisasm")


def sass(ptxas_path: str, nvdisasm: str, ptx: str, arch: str = "sm_90a") -> str:
    """The SASS ptxas makes of `ptx` for `arch`, as nvdisasm prints it."""
    with tempfile.TemporaryDirectory(prefix="mettle-sass-") as tmp:
        src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        Path(src).write_text(ptx, encoding="utf-8")
        subprocess.run([ptxas_path, f"--gpu-name={arch}", src, "-o", cubin], check=True,
                       capture_output=True, timeout=120)
        return subprocess.run([nvdisasm, "-c", cubin], check=True, capture_output=True,
                              text=True, timeout=120).stdout
