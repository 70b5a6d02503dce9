"""Locating and running `ptxas` offline, and parsing its `-v` resource report.

Invariants: ptxas writes its cubin into a private temporary directory that is removed
before `assemble` returns (success or failure); nothing here creates a CUDA context,
queries a device or loads a module. Lookup order: an explicit path, $METTLE_PTXAS, `ptxas`
on PATH, the `nvidia-cuda-nvcc` wheel (nvidia/cu13/bin/ptxas), /usr/local/cuda/bin.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tools.gpu.tool_io import ToolError

_MISSING_HELP = ("pass --ptxas=PATH, set METTLE_PTXAS, or put ptxas on PATH "
                 "(the nvidia-cuda-nvcc==13.0.88 wheel ships one)")
_FUNC_PROPS = re.compile(r"Function properties for (\S+)")
_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_GMEM = re.compile(r"^ptxas info\s*:\s*(\d+) bytes gmem", re.M)


@dataclass
class FunctionResources:
    name: str
    registers: int | None = None
    stack_frame_bytes: int | None = None
    spill_stores_bytes: int | None = None
    spill_loads_bytes: int | None = None
    barriers: int | None = None
    shared_bytes: int | None = None
    constant_bytes: dict[str, int] = field(default_factory=dict)


def _wheel_ptxas() -> Path | None:
    # 13.x wheels keep it in nvidia/cu13/bin, 12.x wheels in nvidia/cuda_nvcc/bin.
    for base in sys.path:
        for rel in ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas"):
            cand = Path(base or ".") / "nvidia" / rel
            if cand.is_file():
                return cand
    return None


def find_ptxas(explicit: str | None = None) -> str:
    """Resolve the ptxas executable or raise a ToolError that says how to provide one."""
    for label, value in (("--ptxas", explicit), ("METTLE_PTXAS", os.environ.get("METTLE_PTXAS"))):
        if value:
            if Path(value).is_file() and os.access(value, os.X_OK):
                return value
            raise ToolError(f"ptxas not found: {label} names {value!r}, which is not an "
                            f"executable file; {_MISSING_HELP}")
    for cand in (shutil.which("ptxas"), _wheel_ptxas(), Path("/usr/local/cuda/bin/ptxas")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return str(cand)
    raise ToolError(f"ptxas not found; {_MISSING_HELP}")


def ptxas_version(ptxas: str) -> str:
    """The last line of `ptxas --version` (e.g. 'Build cuda_13.0.r13.0/compiler.36424714_0')
    plus its release line, so a profile records exactly which assembler produced it."""
    proc = _run([ptxas, "--version"])
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    release = [ln for ln in lines if "release" in ln]
    return "; ".join(release[-1:] + lines[-1:]) if lines else "unknown"


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ToolError(f"cannot run {cmd[0]}: {exc.strerror or exc}") from None


def assemble(ptxas: str, arch: str, ptx_path: str) -> tuple[str, list[FunctionResources]]:
    """Run `ptxas -v` on one file; return the gmem line count and per-function resources."""
    with tempfile.TemporaryDirectory(prefix="mettle-ptxas-") as tmp:
        cubin = str(Path(tmp) / "out.cubin")
        proc = _run([ptxas, "-v", "--gpu-name", arch, "-o", cubin, ptx_path])
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise ToolError(f"ptxas failed on {ptx_path} for {arch} (exit {proc.returncode}):\n"
                        f"{detail}")
    report = proc.stdout + "\n" + proc.stderr
    gmem = _GMEM.search(report)
    return (gmem.group(1) if gmem else "0"), parse_verbose(report)


def parse_verbose(report: str) -> list[FunctionResources]:
    """Parse `ptxas -v` output; one record per 'Function properties for' block, in order."""
    funcs: dict[str, FunctionResources] = {}
    current: FunctionResources | None = None
    for line in report.splitlines():
        if (m := _COMPILING.search(line)) or (m := _FUNC_PROPS.search(line)):
            current = funcs.setdefault(m.group(1), FunctionResources(m.group(1)))
            continue
        if current is None:
            continue
        if m := _FRAME.search(line):
            (current.stack_frame_bytes, current.spill_stores_bytes,
             current.spill_loads_bytes) = (int(g) for g in m.groups())
        if m := _USED.search(line):
            current.registers = int(m.group(1))
            current.barriers = _int_or(_BARRIERS.search(line), current.barriers)
            current.shared_bytes = _int_or(_SMEM.search(line), 0)
            current.constant_bytes = {f"cmem[{b}]": int(n) for n, b in _CMEM.findall(line)}
    return list(funcs.values())


def _int_or(match: re.Match | None, default: int | None) -> int | None:
    return int(match.group(1)) if match else default
