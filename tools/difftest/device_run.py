"""Run one generated kernel through the Python runtime (`mettle`), in its own process.

    python3 -m tools.difftest.device_run FOLDER

FOLDER holds `kernel.ptx` or `kernel.spv` with its signature sidecar (`kernel.ptx.sig.json`),
`job.json` {"kernel": name, "grid": g, "block": b, "args": [ARG...]} with ARG
{"array": "in0.npy"} or {"scalar": value}, and the .npy inputs. Arrays go to the device
(CUDA: mettle.to_device; OpenCL: NumPy arrays as they are), the kernel runs once, and every
array argument comes back as `out<i>.npy`. A faulting kernel poisons its process's CUDA
context, hence one process per kernel (kernel_runs.py starts it; inside the trixie root for
SPIR-V on PoCL). Exit status 0, or 1 with the reason on stderr.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def run(folder: Path) -> None:
    import numpy as np

    import mettle
    job = json.loads((folder / "job.json").read_text())
    artifact = folder / ("kernel.ptx" if (folder / "kernel.ptx").exists() else "kernel.spv")
    module = mettle.load(artifact)
    cuda = module.target == "ptx"
    args = []
    for spec in job["args"]:
        if "array" in spec:
            host = np.load(folder / spec["array"])
            args.append(mettle.to_device(host) if cuda else host)
        else:
            args.append(spec["scalar"])
    module[job["kernel"]][job["grid"], job["block"]](*args)
    for i, (spec, value) in enumerate(zip(job["args"], args)):
        if "array" in spec:
            np.save(folder / f"out{i}.npy", value.numpy() if cuda else value)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m tools.difftest.device_run FOLDER", file=sys.stderr)
        return 2
    try:
        run(Path(argv[0]))
    except Exception as exc:  # noqa: BLE001  one line for the caller's report
        print(f"device_run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
