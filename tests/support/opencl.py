"""Runs SPIR-V kernels on the real OpenCL runtime (PoCL 6) inside the trixie root.

Route: tools/bootstrap/30-opencl-runtime.sh builds `.bootstrap/trixie/` (debootstrap);
tools/opencl_root.py enters it (see there). `run_spirv_kernel` runs
`python3 -m toolchain.providers.opencl.run_spirv` there with files in a temp dir under the
root's /tmp.
"""
from __future__ import annotations

import json
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Run below as `python3 -m toolchain.providers.opencl.run_spirv`: imported so Pants'
# dependency inference gives the tests that use this module its sources.
import toolchain.providers.opencl.run_spirv  # noqa: F401
from tools.opencl_root import opencl_available, run_in_root, trixie_root  # noqa: F401

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
