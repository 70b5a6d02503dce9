"""Compile a generated kernel (PTX and SPIR-V), check it offline (ptxas, spirv-val), run it
where a device is present (SPIR-V on PoCL in the trixie root, PTX on a CUDA GPU) and compare
every output with the C reference. The device runners come from tests/support and
tests/gpu (this tool runs from the repository root, where both import)."""
from __future__ import annotations

import os
import struct
import tempfile

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


def run_spirv(case: KernelCase, spv: bytes) -> list[int]:
    import numpy as np
    from tests.support.opencl import Buf, Scalar, run_spirv_kernel
    args = [Buf(np.full(case.n * case.m, 0x5A5A, dtype=np.int64), "int64", out=True)]
    args += [Buf(np.array(vals, dtype=dt), dt) for _, dt, vals in case.inputs]
    args.append(Scalar(case.n, "int32"))
    out = run_spirv_kernel(spv, case.name, [case.n], [BLOCK], args)
    return decode(out[0], case.n, case.m)


def run_ptx(case: KernelCase, ptx: bytes) -> list[int]:
    import numpy as np
    from tests.gpu.harness import Buffer, Scalar, run_kernel
    args = [Buffer("out", "int64", size=case.n * case.m, poison=0x5A5A, output=True)]
    args += [Buffer(b, dt, data=np.array(vals, dtype=dt)) for b, dt, vals in case.inputs]
    args.append(Scalar("int32", case.n))
    out = run_kernel(ptx.decode(), case.name, grid=case.n // BLOCK, block=BLOCK, args=args)
    return [int(x) for x in out["out"]]


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
    from tests.support import ptxas, spirv
    from tests.support.opencl import opencl_available
    from .runner import cc_path
    if cc_path() is None:
        print("difftest --kernels: no C compiler (cc/gcc) for the CPU reference; "
              "tests/difftest/test_kernels_gpu.py works without one", file=out)
        return 2
    pocl = opencl_available()[0]
    gpu = False
    try:
        from toolchain.providers.cuda import driver
        gpu = driver.probe() is None
    except Exception:  # noqa: BLE001
        gpu = False
    counts = {"ptxas": 0, "spirv-val": 0, "pocl": 0, "gpu": 0}
    bad = 0
    with tempfile.TemporaryDirectory(prefix="difftest-k-") as work:
        for s in seeds:
            case = generate_kernel(s)
            for opt in ("O0", "O"):
                try:
                    want = reference(case, work)
                    ptx, spv = build(case, work, "ptx", opt), build(case, work, "spirv", opt)
                    if ptxas.find_ptxas():
                        ptxas.assemble(ptx.decode(), PTX_ARCH)
                        counts["ptxas"] += 1
                    if spirv.find_spirv_val():
                        spirv.validate(spv)
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
