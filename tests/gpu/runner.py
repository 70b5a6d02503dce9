"""Subprocess entry point of the GPU harness: run one kernel described by a JSON job.

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

import json
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # run as a script: make `toolchain` importable
    sys.path.insert(0, str(REPO_ROOT))

from toolchain.providers.cuda import driver  # noqa: E402
from toolchain.providers.cuda.launch import make_cell  # noqa: E402

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


def _launch(device: driver.Device, function: driver.Function, job: dict, base: Path) -> float:
    """Upload the arguments, launch once, download outputs; returns the elapsed ms."""
    cells, buffers, by_name, views = [], [], {}, []
    for spec in job["args"]:
        if spec["kind"] == "scalar":
            cells.append(make_cell(spec["ctype"], spec["value"]))
            continue
        if spec["kind"] == "tensor_view":
            cells.append(_tensor_view(device, spec, by_name, views))
            continue
        host = initial_contents(spec, base)
        buf = device.alloc(host.nbytes)
        device.upload(buf, host)
        cells.append(buf)
        buffers.append((spec, buf, host))
        by_name[spec["name"]] = buf
    start, end = device.event(), device.event()
    start.record()
    function.launch(job["grid"], job["block"], cells, shared=job.get("shared", 0))
    end.record()
    device.synchronize()
    elapsed = start.elapsed_ms(end)
    for spec, buf, host in buffers:
        if spec.get("output"):
            out = np.empty_like(host)
            device.download(buf, out)
            np.save(base / f"{spec['name']}.npy", out)
        buf.free()
    for view in views:
        view.free()
    return elapsed


def _tensor_view(device, spec: dict, by_name: dict, views: list):
    """The kernel-parameter cell of a tensor-map view of an uploaded buffer."""
    from toolchain.providers.cuda import tensor_map
    if spec["null"]:
        return make_cell("uint64", 0)
    buf, addr = tensor_map.device_view(device, by_name[spec["of"]].ptr, spec["element"],
                                       spec["extents"], spec["strides"], spec["tiles"],
                                       spec["element_strides"], spec["offset"])
    views.append(buf)
    return make_cell("uint64", addr)


def run(job_path: Path) -> dict:
    job = json.loads(job_path.read_text())
    base = job_path.parent
    with driver.Device(job.get("device", 0)) as device:
        module = device.load_ptx((base / job["ptx"]).read_text())
        function = module.function(job["kernel"])
        elapsed = _launch(device, function, job, base)
        report = {"device": device.name, "kernel": job["kernel"], "registers": function.num_regs,
                  "elapsed_ms": elapsed}
        module.unload()
    return report


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: runner.py JOB.json", file=sys.stderr)
        return 2
    try:
        report = run(Path(argv[0]))
    except (driver.CudaError, driver.DriverUnavailable, OSError, ValueError, KeyError) as exc:
        print(f"runner: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
