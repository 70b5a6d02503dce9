"""Subprocess entry point of the GPU harness: run one kernel described by a JSON job, through
the Python runtime (`mettle`): the job's argument list is the kernel's signature, so every
scalar is range-checked at its declared type and every buffer passed as a device array.

    python3 tests/gpu/runner.py JOB.json

A faulting kernel poisons the CUDA context of its whole process, so every kernel of the
hardware suite runs here, in a fresh process (harness.py starts it, optionally under
compute-sanitizer). Paths in the job are relative to the job file's folder.

Job: {"ptx": "kernel.ptx", "kernel": "vadd", "grid": [g, 1, 1], "block": [b, 1, 1],
      "shared": 0, "device": 0, "args": [ARG, ...]}
ARG is {"kind": "scalar", "ctype": "int32", "value": 5} (ctype from launch.CELL_TYPES) or
{"kind": "buffer", "name": "c", "dtype": "float32", "size": n, "data": "c.in.npy" | null,
 "seed": 7 | null, "poison": NaN, "output": true}: the buffer starts as `poison` everywhere,
then `data` (a prefix) or `generate(dtype, size, seed)` is written over it. After the
kernel, each output buffer is written to <name>.npy beside the job, and one JSON line
(device, kernel, registers, elapsed ms) goes to stdout. Exit status: 0 on success, 1 on
any failure (the reason on stderr).
"""
from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # run as a script: make `mettle` importable
    sys.path.insert(0, str(REPO_ROOT))

import mettle  # noqa: E402
from mettle.providers.cuda import driver  # noqa: E402  # pants: no-infer-dep

MAGNITUDE_RANGE = (0.5, 2.0)
INT_RANGE = (1, 100)


def generate(dtype: str, size: int, seed: int) -> np.ndarray:
    """Deterministic random values, never zero (a zero hides a missed load or store)."""
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype)
    if kind.kind == "f":
        values = rng.uniform(*MAGNITUDE_RANGE, size) * rng.choice([-1.0, 1.0], size)
    elif kind.kind == "i":
        values = rng.integers(*INT_RANGE, size) * rng.choice([-1, 1], size)
    elif kind.kind == "u":
        values = rng.integers(*INT_RANGE, size)
    else:
        raise ValueError(f"cannot generate data of dtype {dtype}")
    return values.astype(kind)


def initial_contents(spec: dict, base: Path) -> np.ndarray:
    """A buffer's host contents before the launch (see the module docstring)."""
    host = np.full(spec["size"], spec.get("poison", 0), dtype=np.dtype(spec["dtype"]))
    if spec.get("data"):
        data = np.load(base / spec["data"])
        if data.size > host.size:
            raise ValueError(f"buffer {spec['name']}: {data.size} values exceed size {host.size}")
        host[:data.size] = data.reshape(-1)
    elif spec.get("seed") is not None:
        host[:] = generate(spec["dtype"], spec["size"], spec["seed"])
    return host


def job_signature(job: dict) -> "mettle.Signature":
    """The kernel's typed parameters as the job declares them: buffers are pointers to
    their dtype, scalars their ctype, tensor views and "ptr" scalars untyped addresses."""
    params = []
    for i, spec in enumerate(job["args"]):
        if spec["kind"] == "buffer":
            params.append((spec["name"], spec["dtype"] + "*"))
        elif spec["kind"] == "tensor_view" or spec["ctype"] == "ptr":
            params.append((f"arg{i}", "void*"))
        else:
            params.append((f"arg{i}", spec["ctype"]))
    return mettle.Signature.of(job["kernel"], params)


def _launch(device, kernel, job: dict, base: Path) -> float:
    """Upload the arguments, launch once, download outputs; returns the elapsed ms."""
    args, arrays, by_name, views = [], [], {}, []
    for spec in job["args"]:
        if spec["kind"] == "scalar":
            value = spec["value"]
            args.append(ctypes.c_void_p(value) if spec["ctype"] == "ptr" else value)
            continue
        if spec["kind"] == "tensor_view":
            args.append(_tensor_view(device, spec, by_name, views))
            continue
        array = mettle.to_device(initial_contents(spec, base), device.ordinal)
        args.append(array)
        arrays.append((spec, array))
        by_name[spec["name"]] = array
    start, end = mettle.Event(), mettle.Event()
    start.record()
    kernel[tuple(job["grid"]), tuple(job["block"])](*args, shared=job.get("shared", 0))
    end.record()
    device.synchronize()
    elapsed = start.elapsed_ms(end)
    for spec, array in arrays:
        if spec.get("output"):
            np.save(base / f"{spec['name']}.npy", array.numpy())
        array.free()
    for view in views:
        view.free()
    return elapsed


def _tensor_view(device, spec: dict, by_name: dict, views: list):
    """The address of a tensor-map view of an uploaded buffer (0 for a null view)."""
    from toolchain.providers.cuda import tensor_map
    if spec["null"]:
        return ctypes.c_void_p(0)
    buf, addr = tensor_map.device_view(device.driver, by_name[spec["of"]].ptr, spec["element"],
                                       spec["extents"], spec["strides"], spec["tiles"],
                                       spec["element_strides"], spec["offset"])
    views.append(buf)
    return ctypes.c_void_p(addr)


def run(job_path: Path) -> dict:
    job = json.loads(job_path.read_text())
    base = job_path.parent
    device = mettle.device(job.get("device", 0))
    module = mettle.Module("ptx", (base / job["ptx"]).read_bytes(), job_signature(job),
                           origin=str(base / job["ptx"]), device=device.ordinal)
    kernel = module[job["kernel"]]
    elapsed = _launch(device, kernel, job, base)
    return {"device": device.name, "kernel": job["kernel"], "registers": kernel.registers,
            "elapsed_ms": elapsed}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: runner.py JOB.json", file=sys.stderr)
        return 2
    try:
        report = run(Path(argv[0]))
    except (RuntimeError, driver.DriverUnavailable, OSError, TypeError, ValueError,
            KeyError) as exc:     # RuntimeError: driver errors, mettle.LaunchError
        print(f"runner: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
