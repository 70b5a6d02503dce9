"""GPU test harness: run one PTX kernel in a fresh process and return its output buffers.

    out = run_kernel(ptx, "vadd", grid=17, block=256,
                     args=[Buffer("a", "float32", data=a), Buffer("b", "float32", n, seed=1),
                           Buffer("c", "float32", n, poison=np.nan, output=True),
                           Scalar("uint32", n)])
    out["c"]  # numpy array of `size` elements

Each call writes a job folder (PTX, inputs, job.json) and runs tests/gpu/runner.py in a new
Python process, optionally under `compute-sanitizer --tool memcheck|racecheck
--error-exitcode 99`, so a faulting kernel cannot poison later tests. A failure raises
AssertionError carrying the exit status, stdout, stderr and the command that reproduces it
(the job folder is kept then; it is deleted after a success).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.gpu.runner import generate  # noqa: F401  re-exported: tests rebuild seeded inputs

RUNNER = Path(__file__).with_name("runner.py")
REPO_ROOT = RUNNER.resolve().parents[2]
SANITIZERS = ("memcheck", "racecheck")
SANITIZER_ERROR_EXIT = 99
DEFAULT_TIMEOUT_S = 600


@dataclass
class Buffer:
    """A device buffer argument: `size` elements of `dtype`, passed as an 8-byte pointer."""

    name: str
    dtype: str
    size: int | None = None   # defaults to data.size
    data: np.ndarray | None = None
    seed: int | None = None   # runner.generate(dtype, size, seed) when there is no data
    poison: float | int = 0   # every element not covered by data/seed
    output: bool = False      # returned by run_kernel

    def job_entry(self, folder: Path) -> dict:
        size = self.size if self.size is not None else (0 if self.data is None else self.data.size)
        if self.data is not None:
            np.save(folder / f"{self.name}.in.npy", np.asarray(self.data, dtype=self.dtype))
        if isinstance(self.poison, float) and math.isnan(self.poison) \
                and np.dtype(self.dtype).kind != "f":
            raise ValueError(f"buffer {self.name}: NaN poison needs a float dtype")
        return {"kind": "buffer", "name": self.name, "dtype": self.dtype, "size": size,
                "data": f"{self.name}.in.npy" if self.data is not None else None,
                "seed": self.seed, "poison": self.poison, "output": self.output}


@dataclass
class Scalar:
    """A by-value argument; ctype is a launch.CELL_TYPES name ("int32", "float32", "ptr"...)."""

    ctype: str
    value: int | float

    def job_entry(self, folder: Path) -> dict:
        return {"kind": "scalar", "ctype": self.ctype, "value": self.value}


@dataclass
class TensorView:
    """A CUtensorMap of buffer `of` (an earlier argument), encoded by the driver in the runner
    and passed as a pointer (toolchain/providers/cuda/tensor_map.py). `null` passes 0 and
    `offset` moves the map off its 64-byte alignment: both must fall back to replay."""

    of: str
    element: str
    extents: tuple
    strides: tuple
    tiles: tuple
    element_strides: tuple
    null: bool = False
    offset: int = 0

    def job_entry(self, folder: Path) -> dict:
        return {"kind": "tensor_view", "of": self.of, "element": self.element,
                "extents": list(self.extents), "strides": list(self.strides),
                "tiles": list(self.tiles), "element_strides": list(self.element_strides),
                "null": self.null, "offset": self.offset}


def sanitizer_path() -> str | None:
    """compute-sanitizer from PATH (or $METTLE_COMPUTE_SANITIZER), None when absent."""
    return os.environ.get("METTLE_COMPUTE_SANITIZER") or shutil.which("compute-sanitizer")


def _command(job: Path, sanitizer: str | None) -> list[str]:
    command = [sys.executable, str(RUNNER), str(job)]
    if sanitizer is None:
        return command
    if sanitizer not in SANITIZERS:
        raise ValueError(f"sanitizer must be one of {SANITIZERS}, got {sanitizer!r}")
    tool = sanitizer_path()
    if tool is None:
        pytest.skip("compute-sanitizer is not on PATH")
    return [tool, "--tool", sanitizer, "--error-exitcode", str(SANITIZER_ERROR_EXIT), *command]


def _write_job(folder: Path, ptx_text: str, name: str, grid, block, args, shared: int) -> Path:
    (folder / "kernel.ptx").write_text(ptx_text)
    as_list = (lambda v: [v] if isinstance(v, int) else list(v))
    job = {"ptx": "kernel.ptx", "kernel": name, "grid": as_list(grid), "block": as_list(block),
           "shared": shared, "args": [a.job_entry(folder) for a in args]}
    path = folder / "job.json"
    path.write_text(json.dumps(job, indent=1))
    return path


def _failure(proc: subprocess.CompletedProcess, command: list[str], name: str) -> str:
    what = ("compute-sanitizer reported errors" if proc.returncode == SANITIZER_ERROR_EXIT
            else f"exit status {proc.returncode}")
    return (f"kernel {name!r} failed ({what})\n  rerun: {' '.join(command)}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}")


def run_kernel(ptx_text: str, name: str, grid, block, args: list, shared: int = 0,
               sanitizer: str | None = None,
               timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, np.ndarray]:
    """Run kernel `name` of `ptx_text` once; return {buffer name: contents} of outputs.

    `$METTLE_GPU_SANITIZER` (memcheck or racecheck) applies to every run that does not ask
    for a sanitizer itself, so a whole suite can be re-run under compute-sanitizer."""
    sanitizer = sanitizer or os.environ.get("METTLE_GPU_SANITIZER") or None
    folder = Path(tempfile.mkdtemp(prefix=f"mettle-gpu-{name}-"))
    job = _write_job(folder, ptx_text, name, grid, block, args, shared)
    command = _command(job, sanitizer)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"kernel {name!r} timed out after {timeout} s\n"
                             f"  rerun: {' '.join(command)}\n{exc.stdout}\n{exc.stderr}") from None
    if proc.returncode != 0:
        raise AssertionError(_failure(proc, command, name))
    outputs = {a.name: np.load(folder / f"{a.name}.npy")
               for a in args if isinstance(a, Buffer) and a.output}
    shutil.rmtree(folder, ignore_errors=True)
    _record(name, outputs)
    return outputs


def _record(name: str, outputs: dict[str, np.ndarray]) -> None:
    """With `$METTLE_GPU_RECORD=file`, append one JSON line per launch: the test, the kernel,
    the launch's index within the test and a SHA-256 of each output buffer's bytes
    (compare_records.py compares two runs of the suite, e.g. without and with -O)."""
    path = os.environ.get("METTLE_GPU_RECORD")
    if not path:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
    _LAUNCHES[test] = _LAUNCHES.get(test, 0) + 1
    entry = {"test": test, "kernel": name, "launch": _LAUNCHES[test],
             "outputs": {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
                         for k, v in sorted(outputs.items())}}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")


_LAUNCHES: dict[str, int] = {}
