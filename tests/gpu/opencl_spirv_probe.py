"""Probe the GPU machine's OpenCL platforms for SPIR-V: what they report and what they run.

    python3 tests/gpu/opencl_spirv_probe.py [--json out.json]

Prints every platform/device with CL_DEVICE_IL_VERSION, then compiles the vadd fixture to
SPIR-V with our compiler and runs it through `toolchain.providers.opencl.run_spirv` on each
platform, checking the result against numpy. A script for the device run, not a test: the
answer (accepted or refused, with the build log) is the finding.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from toolchain.compiler.driver import Options, compile_file  # noqa: E402


def info() -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "toolchain.providers.opencl.run_spirv",
                          "--info"], cwd=ROOT, capture_output=True, text=True)
    print(out.stdout or out.stderr)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return []


def run_vadd(platform: str, spv: bytes) -> dict:
    n = 4099
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 2, n).astype(np.float32)
    b = rng.uniform(0.5, 2, n).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "k.spv").write_bytes(spv)
        a.tofile(t / "a.bin")
        b.tofile(t / "b.bin")
        args = [{"kind": "buffer", "dtype": "float32", "file": "a.bin"},
                {"kind": "buffer", "dtype": "float32", "file": "b.bin"},
                {"kind": "buffer", "dtype": "float32", "count": n, "output": "c.out"},
                {"kind": "scalar", "dtype": "int32", "value": n}]
        (t / "args.json").write_text(json.dumps(args))
        env = dict(os.environ, METTLE_OPENCL_PLATFORM=platform)
        proc = subprocess.run([sys.executable, "-m", "toolchain.providers.opencl.run_spirv",
                               str(t / "k.spv"), "vadd", "--global", str((n + 255) // 256 * 256),
                               "--local", "256", "--args", str(t / "args.json")],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        result = {"platform": platform, "exit": proc.returncode,
                  "stderr": proc.stderr[-2000:]}
        if proc.returncode == 0:
            c = np.fromfile(t / "c.out", dtype=np.float32)
            result["correct"] = bool(np.array_equal(c[:n], a + b))
        return result


def main() -> int:
    devices = info()
    spv = compile_file(str(ROOT / "tests/data/kernels/vadd.mettle"),
                       Options(emit="spirv")).data
    platforms = sorted({d.get("platform", "") for d in devices}) or [""]
    results = [run_vadd(p, spv) for p in platforms]
    for r in results:
        print(json.dumps(r, indent=1))
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(
            json.dumps({"devices": devices, "runs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
