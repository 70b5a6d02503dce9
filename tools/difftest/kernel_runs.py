"""Compile a generated kernel (PTX and SPIR-V), check it offline (ptxas, spirv-val), run it
where a device is present (SPIR-V on PoCL in the trixie root, PTX on a CUDA GPU) and compare
every output with the C reference. Kernels run through the Python runtime (`mettle`) in a
process of their own (device_run.py; tools/opencl_root.py enters the root)."""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from .kernels import BLOCK, KernelCase, generate_kernel
from .runner import compile_mettle, run_c

PTX_ARCH = "sm_90a"


def reference(case: KernelCase, workdir: str) -> list[int]:
    out = run_c(case.c, workdir, f"kref{case.seed}")
    if out.kind != "ok":
        raise RuntimeError(f"C reference failed ({out.kind}): {out.detail[:500]}")
    return [int(x) for x in out.stdout.split()]


def build(case: KernelCase, workdir: str, kind: str, opt: str = "O0") -> bytes:
    """kind "ptx" or "spirv", opt "O0" or "O"; raises RuntimeError with the diagnostics."""
    src = os.path.join(workdir, f"{case.name}.mettle")
    with open(src, "w") as f:
        f.write(case.mettle)
    out = os.path.join(workdir, f"{case.name}.{opt}.{kind}")
    flags = ["--fp-contract=off"] + ([f"--gpu-arch={PTX_ARCH}"] if kind == "ptx" else [])
    flags += ["-O"] if opt == "O" else []
    rc, diag = compile_mettle_emit(src, out, kind, flags)
    if rc != 0:
        raise RuntimeError(f"{kind} compile failed:\n{diag}")
    with open(out, "rb") as f:
        return f.read()


def compile_mettle_emit(src: str, out: str, kind: str, flags: list[str]):
    return compile_mettle([f"--emit-{kind}", src, "-o", out, *flags])


def decode(raw: bytes, n: int, m: int) -> list[int]:
    return list(struct.unpack(f"<{n * m}q", raw[:8 * n * m]))


def case_signature(case: KernelCase, target: str) -> dict:
    """The generated kernel's parameters (kernels.render) as a mettle.signature/1 document:
    out: int64*, one typed input buffer per scalar type, n: int32."""
    import mettle
    params = [("out", "int64*")] + [(b, f"{dt}*") for b, dt, _ in case.inputs] + \
        [("n", "int32")]
    return mettle.Signature.of(case.name, params, target).to_json()


def _write_job(folder: Path, case: KernelCase, artifact: bytes, target: str) -> None:
    import numpy as np
    name = "kernel.ptx" if target == "ptx" else "kernel.spv"
    (folder / name).write_bytes(artifact)
    (folder / f"{name}.sig.json").write_text(json.dumps(case_signature(case, target)))
    arrays = [np.full(case.n * case.m, 0x5A5A, dtype=np.int64)]
    arrays += [np.array(vals, dtype=dt) for _, dt, vals in case.inputs]
    for i, array in enumerate(arrays):
        np.save(folder / f"in{i}.npy", array)
    args = [{"array": f"in{i}.npy"} for i in range(len(arrays))] + [{"scalar": case.n}]
    (folder / "job.json").write_text(json.dumps(
        {"kernel": case.name, "grid": -(-case.n // BLOCK), "block": BLOCK, "args": args}))


def _outputs(folder: Path) -> list[int]:
    import numpy as np
    return [int(x) for x in np.load(folder / "out0.npy")]


def run_spirv(case: KernelCase, spv: bytes) -> list[int]:
    from tools.opencl_root import run_in_root, trixie_root
    root = trixie_root()
    if root is None:
        raise RuntimeError("the trixie root is not bootstrapped")
    with tempfile.TemporaryDirectory(dir=root / "tmp") as tmp:
        _write_job(Path(tmp), case, spv, "spirv")
        proc = run_in_root(f"PYTHONPATH=/mnt/repo python3 -m tools.difftest.device_run "
                           f"/tmp/{Path(tmp).name}")
        if proc.returncode != 0:
            raise RuntimeError(f"PoCL run failed ({proc.returncode}):\n{proc.stderr}")
        return _outputs(Path(tmp))


def run_ptx(case: KernelCase, ptx: bytes) -> list[int]:
    with tempfile.TemporaryDirectory(prefix="difftest-gpu-") as tmp:
        _write_job(Path(tmp), case, ptx, "ptx")
        repo = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [repo, os.environ.get("PYTHONPATH")])))
        proc = subprocess.run([sys.executable, "-m", "tools.difftest.device_run", tmp],
                              capture_output=True, text=True, env=env, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"GPU run failed ({proc.returncode}):\n{proc.stderr}")
        return _outputs(Path(tmp))


def _ptxas() -> str | None:
    from tools.gpu.ptxas_runner import find_ptxas
    from tools.gpu.tool_io import ToolError
    try:
        return find_ptxas()
    except ToolError:
        return None


def _check_ptx(ptxas: str, ptx: bytes, work: str) -> None:
    from tools.gpu.ptxas_runner import assemble
    path = os.path.join(work, "check.ptx")
    with open(path, "wb") as f:
        f.write(ptx)
    assemble(ptxas, PTX_ARCH, path)          # raises ToolError with ptxas's message


def _spirv_val() -> str | None:
    from tools.opencl_root import repo_roots
    for root in repo_roots():
        path = root / ".bootstrap/spirv-tools/usr/bin/spirv-val"
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which("spirv-val")


def _check_spirv(tool: str, spv: bytes, work: str) -> None:
    path = os.path.join(work, "check.spv")
    with open(path, "wb") as f:
        f.write(spv)
    env = dict(os.environ)
    lib = Path(tool).parents[1] / "lib" / "x86_64-linux-gnu"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(lib),
                                                               env.get("LD_LIBRARY_PATH")]))
    proc = subprocess.run([tool, "--target-env", "opencl2.0", path], capture_output=True,
                          text=True, env=env, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"spirv-val rejected the module:\n{proc.stdout}{proc.stderr}")


def first_difference(want: list[int], got: list[int], m: int) -> str | None:
    for k, (a, b) in enumerate(zip(want, got)):
        if a != b:
            return f"item {k // m} output {k % m}: C {a}, device {b}"
    if len(want) != len(got):
        return f"C gave {len(want)} values, device {len(got)}"
    return None


def reduce_failure(case: KernelCase, err: Exception, opt: str, work: str) -> KernelCase:
    """The smallest kernel that still fails to build the same way (compile errors only;
    a wrong output is reported whole)."""
    from .kernels import reduce_kernel
    text = str(err).splitlines()
    kind = "ptx" if text and text[0].startswith("ptx") else "spirv"
    first = next((line for line in text[1:] if line.startswith("error")), None)
    if first is None or not text[0].endswith("compile failed:"):
        return case

    def interesting(c):
        try:
            build(c, work, kind, opt)
        except RuntimeError as e2:
            return first in str(e2)
        return False
    return reduce_kernel(case, interesting)[0]


def cli(seeds, args, out) -> int:
    """Offline checks always; PoCL and GPU runs where available. Exit 1 on any mismatch."""
    from tools.opencl_root import opencl_available
    from .runner import cc_path
    if cc_path() is None:
        print("difftest --kernels: no C compiler (cc/gcc) for the CPU reference; "
              "tests/difftest/test_kernels_gpu.py works without one", file=out)
        return 2
    pocl = opencl_available()[0]
    gpu = False
    try:
        from mettle.providers.cuda import driver  # pants: no-infer-dep
        gpu = driver.probe() is None
    except Exception:  # noqa: BLE001
        gpu = False
    ptxas, spirv_val = _ptxas(), _spirv_val()
    counts = {"ptxas": 0, "spirv-val": 0, "pocl": 0, "gpu": 0}
    bad = 0
    with tempfile.TemporaryDirectory(prefix="difftest-k-") as work:
        for s in seeds:
            case = generate_kernel(s)
            for opt in ("O0", "O"):
                try:
                    want = reference(case, work)
                    ptx, spv = build(case, work, "ptx", opt), build(case, work, "spirv", opt)
                    if ptxas:
                        _check_ptx(ptxas, ptx, work)
                        counts["ptxas"] += 1
                    if spirv_val:
                        _check_spirv(spirv_val, spv, work)
                        counts["spirv-val"] += 1
                    runs = []
                    if pocl:
                        runs.append(("pocl", run_spirv(case, spv)))
                    if gpu:
                        runs.append(("gpu", run_ptx(case, ptx)))
                    for where, got in runs:
                        counts[where] += 1
                        diff = first_difference(want, got, case.m)
                        if diff:
                            bad += 1
                            print(f"kernel seed {s} -{opt}: {where} MISMATCH {diff}\n"
                                  f"{case.mettle}", file=out)
                except Exception as e:  # noqa: BLE001
                    bad += 1
                    print(f"kernel seed {s} -{opt}: FAILED {e}", file=out)
                    small = reduce_failure(case, e, opt, work)
                    print(f"reduced:\n{small.mettle}", file=out, flush=True)
    print(f"difftest --kernels: {len(seeds)} kernels at -O0 and -O, runs {counts}, "
          f"{bad} failing", file=out)
    return 1 if bad else 0
