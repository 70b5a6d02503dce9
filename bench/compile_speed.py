"""Compile-speed benchmark (a script, not a test): how long one `mettle --emit-ptx` takes.

    python3 bench/compile_speed.py [--runs N] [--json out.json] [--venv DIR] [files...]
    python3 bench/compile_speed.py --in-process-only [files...]   # in process and -O ratio

For each kernel file (default: bench/kernels/typical200.mettle, a typical 200-line file):

- whole process, as users run it: the `mettle` script of a `pip install .` of this checkout
  in a throwaway virtual environment (byte-compiled by pip; `--venv DIR` keeps and reuses
  one), beside that environment's `python -c pass`;
- whole process from the source tree: `python3 -m toolchain.compiler`, with byte code
  cached in a temporary directory, beside `python3 -c pass`;
- in process: `driver.compile_file` after one warm-up, with its per-phase split, and the
  CPU time of importing the compiler in a fresh process;
- in process, `-O` against plain: alternating runs, minimum CPU time of each and their
  ratio (issue 18: at most 1.3). `--in-process-only` skips the whole-process runs.

Whole-process runs alternate with their baseline (A B A B ...) and report the median wall
time and the median CPU time (user + sys, from wait4); on a shared machine CPU time is the
steadier figure. `--instructions` also counts the instructions of one run of each command
under valgrind's callgrind (the minimum of 3): a figure that does not move with the load of
a shared machine, for A/B comparisons of start-up work; with it the in-process -O/plain
comparison also gets the instructions of one compile each (a child compiling 1 + 2 times
minus one compiling once) and their ratio, the noise-free form of issue 18's measure.
Results print as a table and go to JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DEFAULT_FILES = [os.path.join(ROOT, "bench", "kernels", "typical200.mettle")]
PACKAGE_SOURCES = ("pyproject.toml", "setup.py", "README.md", "toolchain", "std")
# What an --emit-ptx compile imports (the emitter and module loader load lazily).
IMPORTS = ("import toolchain.compiler.cli, toolchain.compiler.driver, "
           "toolchain.compiler.frontend.api, toolchain.compiler.frontend.modules, "
           "toolchain.compiler.targets.ptx.emitter")


def run_once(cmd: list[str], env: dict, cwd: str) -> tuple[float, float]:
    """(wall, cpu) seconds of one whole process; raises if it fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def paired(cmd: list[str], base: list[str], runs: int, env: dict, cwd: str) -> dict:
    """Median wall/cpu (ms) of `cmd` and of `base`, run in turn after one warm-up each."""
    run_once(cmd, env, cwd)
    run_once(base, env, cwd)
    a, b = [], []
    for _ in range(runs):
        a.append(run_once(cmd, env, cwd))
        b.append(run_once(base, env, cwd))

    def med(xs, i):
        return round(statistics.median(x[i] for x in xs) * 1000, 1)
    return {"wall_ms": med(a, 0), "cpu_ms": med(a, 1), "baseline_wall_ms": med(b, 0),
            "baseline_cpu_ms": med(b, 1), "runs": runs}


def instructions_m(cmd: list[str], env: dict, cwd: str, repeat: int = 3) -> float | None:
    """Millions of instructions one run of `cmd` executes (callgrind, fixed hash seed, the
    least of `repeat` runs), or None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    counts = []
    for _ in range(repeat):
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                               *cmd], env={**env, "PYTHONHASHSEED": "0"}, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        counts += [int(line.split()[-1].replace(",", "")) for line in proc.stderr.splitlines()
                   if "Collected :" in line]
    return round(min(counts) / 1e6, 1) if counts else None


# One child process: a warm-up compile, then N more (plain or -O, sm_90a PTX, in process).
_COMPILES = ("import sys; sys.path.insert(0, {root!r}); "
             "from toolchain.compiler.driver import Options, compile_file; "
             "o = Options(emit='ptx', gpu_arch='sm_90a', optimize={opt}); "
             "[compile_file({path!r}, o) for _ in range(1 + {n})]")


def optimize_instructions(path: str) -> dict | None:
    """Millions of instructions of one in-process compile, plain and -O, and their ratio:
    callgrind counts of a child that compiles 1 + 2 times minus one that compiles once (the
    start-up and warm-up cancel). Load-free, so small A/B changes show; None without
    valgrind."""
    if shutil.which("valgrind") is None:
        return None
    got = {}
    for key, opt in (("plain_instructions_m", False), ("O_instructions_m", True)):
        counts = []
        for n in (0, 2):
            code = _COMPILES.format(root=ROOT, opt=opt, path=path, n=n)
            m = instructions_m([sys.executable, "-c", code], dict(os.environ), ROOT, repeat=1)
            if m is None:
                return None
            counts.append(m)
        got[key] = round((counts[1] - counts[0]) / 2, 1)
    got["ratio"] = round(got["O_instructions_m"] / got["plain_instructions_m"], 3)
    return got


def installed_venv(path: str | None) -> str:
    """A venv holding `pip install .` of this checkout (made once when `path` is reused)."""
    path = path or tempfile.mkdtemp(prefix="mettle-bench-venv-")
    exe = os.path.join(path, "bin", "mettle")
    if os.path.exists(exe):
        return path
    src = tempfile.mkdtemp(prefix="mettle-bench-src-")
    for name in PACKAGE_SOURCES:
        s = os.path.join(ROOT, name)
        if os.path.isdir(s):
            shutil.copytree(s, os.path.join(src, name),
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(s, os.path.join(src, name))
    venv.create(path, with_pip=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([os.path.join(path, "bin", "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", src], check=True, env=env)
    shutil.rmtree(src, ignore_errors=True)
    return path


def in_process(path: str, runs: int) -> dict:
    from toolchain.compiler.driver import Options, compile_file
    opts = Options(emit="ptx", gpu_arch="sm_90a")
    compile_file(path, opts)                          # warm-up: imports, caches
    wall, cpu, phases = [], [], {}
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        result = compile_file(path, opts)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        for name, secs in result.timings.items():
            phases.setdefault(name, []).append(secs)
    return {"wall_ms": round(statistics.median(wall) * 1000, 2),
            "cpu_ms": round(statistics.median(cpu) * 1000, 2),
            "phases_ms": {k: round(statistics.median(v) * 1000, 2) for k, v in phases.items()}}


def optimize_ratio(path: str, runs: int) -> dict:
    """In process, `-O` against the same compile without it: alternating runs, the minimum
    CPU time of each (the steadiest figure on a shared machine). Issue 18's target is a
    ratio of at most 1.3."""
    from toolchain.compiler.driver import Options, compile_file
    plain = Options(emit="ptx", gpu_arch="sm_90a")
    opt = Options(emit="ptx", gpu_arch="sm_90a", optimize=True)
    compile_file(path, plain)
    compile_file(path, opt)
    a, b = [], []
    for _ in range(runs):
        for opts, xs in ((plain, a), (opt, b)):
            c0 = time.process_time()
            compile_file(path, opts)
            xs.append(time.process_time() - c0)
    return {"plain_cpu_ms": round(min(a) * 1000, 2), "O_cpu_ms": round(min(b) * 1000, 2),
            "ratio": round(min(b) / min(a), 2), "runs": runs}


def import_cpu_ms(python: str, env: dict, runs: int) -> float:
    """Median CPU time of importing the PTX compile path in a fresh process."""
    code = f"import time; t = time.process_time(); {IMPORTS}; print(time.process_time() - t)"
    samples = [float(subprocess.run([python, "-c", code], env=env, cwd=ROOT, check=True,
                                    capture_output=True, text=True).stdout)
               for _ in range(runs)]
    return round(statistics.median(samples) * 1000, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--runs", type=int, default=15, help="whole-process runs per command")
    ap.add_argument("--json", default="compile_speed.json")
    ap.add_argument("--venv", help="keep (and reuse) the pip-installed venv here")
    ap.add_argument("--no-install", action="store_true", help="skip the pip-installed runs")
    ap.add_argument("--in-process-only", action="store_true",
                    help="skip every whole-process run (in-process figures and -O ratio only)")
    ap.add_argument("--instructions", action="store_true",
                    help="also count whole-process instructions under callgrind (load-free)")
    args = ap.parse_args()
    files = [os.path.abspath(f) for f in args.files] or DEFAULT_FILES
    report: dict = {"python": sys.version.split()[0], "files": []}

    src_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    pyc = tempfile.mkdtemp(prefix="mettle-bench-pyc-")
    src_env.update(PYTHONPATH=ROOT, PYTHONPYCACHEPREFIX=pyc)
    venv_dir = None if args.no_install or args.in_process_only else installed_venv(args.venv)
    out = os.path.join(tempfile.mkdtemp(prefix="mettle-bench-out-"), "k.ptx")

    for path in files:
        flags = ["--emit-ptx", "--gpu-arch=sm_90a", path, "-o", out]
        row: dict = {"file": os.path.relpath(path, ROOT),
                     "lines": sum(1 for _ in open(path, encoding="utf-8"))}
        if venv_dir:
            vpy = os.path.join(venv_dir, "bin", "python")
            row["installed"] = paired([os.path.join(venv_dir, "bin", "mettle"), *flags],
                                      [vpy, "-c", "pass"], args.runs, src_env, ROOT)
            row["installed"]["import_cpu_ms"] = import_cpu_ms(vpy, src_env, 7)
            if args.instructions:
                row["installed"]["instructions_m"] = instructions_m(
                    [os.path.join(venv_dir, "bin", "mettle"), *flags], src_env, ROOT)
                row["installed"]["baseline_instructions_m"] = instructions_m(
                    [vpy, "-c", "pass"], src_env, ROOT)
        if not args.in_process_only:
            row["source"] = paired([sys.executable, "-m", "toolchain.compiler", *flags],
                                   [sys.executable, "-c", "pass"], args.runs, src_env, ROOT)
            if args.instructions:
                row["source"]["instructions_m"] = instructions_m(
                    [sys.executable, "-m", "toolchain.compiler", *flags], src_env, ROOT)
                row["source"]["baseline_instructions_m"] = instructions_m(
                    [sys.executable, "-c", "pass"], src_env, ROOT)
        row["in_process"] = in_process(path, max(args.runs, 10))
        row["optimize"] = optimize_ratio(path, max(args.runs, 10))
        if args.instructions:
            row["optimize"]["instructions"] = optimize_instructions(path)
        report["files"].append(row)

    print(f"{'file':<22} {'how':<22} {'wall ms':>8} {'cpu ms':>7} "
          f"{'python -c pass wall/cpu':>24}   (target: mettle <= 100 ms median)")
    for row in report["files"]:
        name = os.path.basename(row["file"])
        for how, key in (("pip-installed mettle", "installed"),
                         ("python -m (source)", "source")):
            r = row.get(key)
            if r:
                print(f"{name:<22} {how:<22} {r['wall_ms']:>8.1f} {r['cpu_ms']:>7.1f} "
                      f"{r['baseline_wall_ms']:>15.1f} / {r['baseline_cpu_ms']:.1f}")
                if r.get("instructions_m") is not None:
                    print(f"{name:<22} {'  instructions (M)':<22} {r['instructions_m']:>8.1f} "
                          f"{'':>7} {r['baseline_instructions_m']:>15.1f}")
        ip = row["in_process"]
        phases = ", ".join(f"{k} {v:.1f}" for k, v in ip["phases_ms"].items())
        print(f"{name:<22} {'in process':<22} {ip['wall_ms']:>8.1f} {ip['cpu_ms']:>7.1f}"
              f"   phases: {phases}")
        o = row["optimize"]
        print(f"{name:<22} {'in process, -O / plain':<22} {'':>8} {o['O_cpu_ms']:>7.1f}"
              f"   plain {o['plain_cpu_ms']:.1f} cpu ms (min of {o['runs']}), "
              f"-O/plain {o['ratio']:.2f} (target <= 1.3)")
        oi = o.get("instructions")
        if oi:
            print(f"{name:<22} {'  instructions (M)':<22} {oi['O_instructions_m']:>16.1f}"
                  f"   plain {oi['plain_instructions_m']:.1f} per compile, "
                  f"-O/plain {oi['ratio']:.3f}")
        if "installed" in row:
            print(f"{name:<22} {'imports (fresh process)':<22} {'':>8} "
                  f"{row['installed']['import_cpu_ms']:>7.1f}")
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2, sort_keys=True)
    print(f"wrote {args.json}")
    shutil.rmtree(pyc, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
