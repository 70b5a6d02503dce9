"""Runs SPIR-V kernels on the real OpenCL runtime (PoCL 6) inside the trixie root.

Route: tools/bootstrap/30-opencl-runtime.sh builds `.bootstrap/trixie/` (debootstrap). This
module enters it as root with `unshare --mount` (a private mount namespace, so nothing is
mounted on the host), mounts /proc, /sys and /dev (PoCL's hwloc needs the CPU topology),
bind-mounts the repository read-only at /mnt/repo, and runs
`python3 -m toolchain.providers.opencl.run_spirv` there with files in a temp dir under the
root's /tmp. `opencl_available()` says whether that works, with a reason, for clean skips.
The environment passes through: METTLE_OPENCL_PLATFORM=rusticl (plus RUSTICL_ENABLE=llvmpipe)
selects Mesa's rusticl when the root has it; the default is the first SPIR-V device (PoCL).
"""
from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support.spirv import repo_roots
# Run below as `python3 -m toolchain.providers.opencl.run_spirv`: imported so Pants'
# dependency inference gives the tests that use this module its sources.
import toolchain.providers.opencl.run_spirv  # noqa: F401

_ROOT_REL = Path(".bootstrap/trixie")
_STAMP = ".mettle-opencl-stamp"
_DTYPE_SIZES = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
                "int64": 8, "uint64": 8, "float32": 4, "float64": 8}


@dataclass
class Buf:
    """A global buffer argument: raw bytes (or anything with tobytes()); `out` reads it back."""
    data: object
    dtype: str = "float32"
    out: bool = False


@dataclass
class Scalar:
    value: int | float
    dtype: str = "uint32"


@dataclass
class Local:
    """A local-memory argument of `nbytes` bytes (clSetKernelArg(size, NULL))."""
    nbytes: int


def trixie_root() -> Path | None:
    for root in repo_roots():
        if (root / _ROOT_REL / _STAMP).is_file():
            return root / _ROOT_REL
    return None


def _chroot_command(root: Path, repo: Path, inner: str) -> list[str]:
    mounts = (f"mount -t proc proc {root}/proc && mount --rbind /sys {root}/sys && "
              f"mount --rbind /dev {root}/dev && mount --bind {repo} {root}/mnt/repo && "
              f"mount -o remount,bind,ro {root}/mnt/repo")
    chrooted = shlex.quote(f"cd /mnt/repo && PYTHONDONTWRITEBYTECODE=1 {inner}")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f"{mounts} && exec chroot {root} sh -c {chrooted}"]


def run_in_root(inner: str, timeout: float = 300) -> subprocess.CompletedProcess:
    root = trixie_root()
    if root is None:
        raise RuntimeError("the trixie root is not bootstrapped")
    repo = root.parents[1]
    return subprocess.run(_chroot_command(root, repo, inner), capture_output=True, text=True,
                          timeout=timeout)


@functools.lru_cache(maxsize=None)
def opencl_available() -> tuple[bool, str]:
    """(True, device JSON) when a SPIR-V OpenCL device runs in the root, else (False, why)."""
    if trixie_root() is None:
        return False, "no trixie root: run tools/bootstrap/30-opencl-runtime.sh (as root)"
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False, "entering the trixie root needs root and unshare"
    proc = run_in_root("python3 -m toolchain.providers.opencl.run_spirv --info", timeout=120)
    if proc.returncode != 0:
        return False, f"OpenCL probe failed: {proc.stderr.strip()[-400:]}"
    devices = json.loads(proc.stdout)
    if not any("SPIR-V" in d["il_version"] for d in devices):
        return False, f"no device reports SPIR-V in CL_DEVICE_IL_VERSION: {proc.stdout}"
    return True, proc.stdout


def _spec(index: int, arg: object, tmp: Path) -> dict:
    if isinstance(arg, Local):
        return {"kind": "local", "size": arg.nbytes}
    if isinstance(arg, Scalar):
        return {"kind": "scalar", "dtype": arg.dtype, "value": arg.value}
    if not isinstance(arg, Buf):
        raise TypeError(f"kernel argument {index}: use Buf, Scalar or Local, not {arg!r}")
    data = arg.data.tobytes() if hasattr(arg.data, "tobytes") else bytes(arg.data)
    (tmp / f"in{index}.bin").write_bytes(data)
    spec = {"kind": "buffer", "dtype": arg.dtype, "file": f"in{index}.bin"}
    if arg.out:
        spec["output"] = f"out{index}.bin"
    return spec


def run_spirv_kernel(spv: bytes, name: str, global_size: list[int],
                     local_size: list[int] | None, args: list) -> dict[int, bytes]:
    """Run kernel `name` of module `spv`; returns {argument index: bytes} for `out` buffers.

    Raises RuntimeError with the runner's stderr (build log included) when it fails."""
    root = trixie_root()
    if root is None:
        raise RuntimeError("the trixie root is not bootstrapped")
    with tempfile.TemporaryDirectory(dir=root / "tmp") as tmp_name:
        tmp = Path(tmp_name)
        inside = Path("/tmp") / tmp.name
        (tmp / "kernel.spv").write_bytes(spv)
        specs = [_spec(i, a, tmp) for i, a in enumerate(args)]
        (tmp / "args.json").write_text(json.dumps(specs))
        sizes = f"--global {' '.join(map(str, global_size))}"
        if local_size:
            sizes += f" --local {' '.join(map(str, local_size))}"
        proc = run_in_root(f"python3 -m toolchain.providers.opencl.run_spirv "
                           f"{inside}/kernel.spv {shlex.quote(name)} {sizes} "
                           f"--args {inside}/args.json --report {inside}/report.json")
        if proc.returncode != 0:
            raise RuntimeError(f"run_spirv failed ({proc.returncode}):\n{proc.stderr}")
        return {i: (tmp / s["output"]).read_bytes() for i, s in enumerate(specs)
                if s.get("output")}


def dtype_size(dtype: str) -> int:
    return _DTYPE_SIZES[dtype]
