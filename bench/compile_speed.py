"""Compile-speed benchmark (a script, not a test): in-process and whole-process medians.

    python3 bench/compile_speed.py [--runs N] [--json out.json] [files...]

For every kernel file (default: bench/kernels/*.mettle and tests/data/kernels/*.mettle) it
times (1) the in-process compile to PTX (`driver.compile_file`, after one warm-up), without
and with `-O` (issue 18's budget: -O within 1.3x of the plain compile), and (2) a
whole `python -m toolchain.compiler --emit-ptx` process, and prints per-file medians. It also
reports which modules a PTX compile imported, since lazy imports are part of the budget.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _in_process(path: str, runs: int, optimize: bool = False) -> list[float]:
    from toolchain.compiler.driver import Options, compile_file
    opts = Options(emit="ptx", gpu_arch="sm_90a", optimize=optimize)
    compile_file(path, opts)                          # warm-up: imports, caches
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        compile_file(path, opts)
        times.append(time.perf_counter() - t0)
    return times


def _process(path: str, runs: int) -> list[float]:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "k.ptx")
        cmd = [sys.executable, "-m", "toolchain.compiler", "--emit-ptx", "--gpu-arch=sm_90a",
               path, "-o", out]
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    return times


def _imported_layers(path: str) -> list[str]:
    code = ("import sys; from toolchain.compiler.driver import Options, compile_file;"
            f"compile_file({path!r}, Options(emit='ptx', gpu_arch='sm_90a'));"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('toolchain'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--process-runs", type=int, default=5)
    ap.add_argument("--json", default="compile_speed.json")
    args = ap.parse_args()
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "bench/kernels/*.mettle")) +
                                 glob.glob(os.path.join(ROOT, "tests/data/kernels/*.mettle")))
    rows = []
    print(f"{'file':<28} {'lines':>5} {'in-process ms':>14} {'-O ms':>8} {'-O/plain':>8} "
          f"{'process ms':>11}")
    for f in files:
        lines = sum(1 for _ in open(f, encoding="utf-8"))
        inproc = statistics.median(_in_process(f, args.runs)) * 1000
        opt = statistics.median(_in_process(f, args.runs, optimize=True)) * 1000
        proc = statistics.median(_process(f, args.process_runs)) * 1000
        rows.append({"file": os.path.relpath(f, ROOT), "lines": lines,
                     "in_process_ms_median": round(inproc, 3),
                     "in_process_O_ms_median": round(opt, 3),
                     "O_ratio": round(opt / inproc, 3),
                     "process_ms_median": round(proc, 3)})
        print(f"{os.path.basename(f):<28} {lines:>5} {inproc:>14.2f} {opt:>8.2f} "
              f"{opt / inproc:>8.2f} {proc:>11.1f}")
    layers = _imported_layers(files[0]) if files else []
    forbidden = [m for m in layers if any(m.startswith(p) for p in (
        "toolchain.compiler.targets.x86_64", "toolchain.compiler.targets.spirv",
        "toolchain.linker", "toolchain.providers"))]
    print(f"modules imported by a PTX compile: {len(layers)}; forbidden: {forbidden or 'none'}")
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"python": sys.version.split()[0], "rows": rows,
                   "forbidden_imports": forbidden}, fh, indent=2, sort_keys=True)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
