"""Host code speed (a script, not a test): compute-bound programs in Mettle against the same
programs in C compiled by the system C compiler.

    python3 bench/host_speed.py [--runs N] [--target T] [--json out.json] [names...]

Programs (bench/host/NAME.mettle and NAME.c): loops (64-bit integer LCG loop), matmul
(160x160 float64, 12 times), sieve (Eratosthenes to 8M, 5 times), recursion (fib(32) and
Ackermann). Each is built as Mettle -O0, -O and --release (-O without the run-time checks)
and as C -O0 and -O2 (`$CC`, default cc); the outputs must agree. Every executable runs `--runs` times (default 3), the four builds
taking turns, and reports its fastest CPU time (user + sys, from wait4; steadier than wall
time on a shared machine). The
table gives Mettle -O's time, its ratio to gcc -O0 and -O2, and "checks" = -O / --release:
what the run-time checks of a non-release build cost (docs/reference/runtime-checks.md). `--target=aarch64-linux` runs
under qemu (only relative numbers mean anything there) with $CC_AARCH64 (default
aarch64-linux-gnu-gcc) for the C side.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ("loops", "matmul", "sieve", "recursion")
QEMU = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]


def build_mettle(name: str, out: str, opt: bool | str, target: str) -> None:
    flags = {False: [], True: ["-O"], "release": ["--release"]}[opt]
    cmd = [sys.executable, "-m", "toolchain.compiler", "--build",
           os.path.join(ROOT, "bench", "host", name + ".mettle"), "-o", out,
           f"--target={target}"] + flags
    subprocess.run(cmd, cwd=ROOT, check=True)


def build_c(name: str, out: str, level: str, target: str) -> None:
    cc = os.environ.get("CC_AARCH64", "aarch64-linux-gnu-gcc") if target == "aarch64-linux" \
        else os.environ.get("CC", "cc")
    subprocess.run([cc, level, "-o", out, os.path.join(ROOT, "bench", "host", name + ".c")],
                   check=True)


def cpu_time(cmd: list[str]) -> tuple[float, str]:
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out)
        _pid, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{cmd[-1]} failed ({status})")
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, out.read().decode()


def measure(names, runs: int, target: str) -> list[dict]:
    rows = []
    prefix = QEMU if target == "aarch64-linux" else []
    with tempfile.TemporaryDirectory(prefix="host-speed-") as d:
        for name in names:
            exes = {}
            for label, make in (("mettle -O0", lambda o: build_mettle(name, o, False, target)),
                                ("mettle -O", lambda o: build_mettle(name, o, True, target)),
                                ("mettle -r", lambda o: build_mettle(name, o, "release",
                                                                     target)),
                                ("cc -O0", lambda o: build_c(name, o, "-O0", target)),
                                ("cc -O2", lambda o: build_c(name, o, "-O2", target))):
                exe = os.path.join(d, f"{name}-{label.replace(' ', '')}")
                make(exe)
                exes[label] = exe
            times, outputs = {}, set()
            for _ in range(runs):      # rounds over all builds: load changes hit them alike
                for label, exe in exes.items():
                    t, text = cpu_time(prefix + [exe])
                    outputs.add(text)
                    times[label] = min(times.get(label, t), t)
            if len(outputs) != 1:
                raise RuntimeError(f"{name}: the builds disagree: {sorted(outputs)}")
            rows.append({"program": name, **{k: round(v, 3) for k, v in times.items()},
                         "vs cc -O0": round(times["mettle -O"] / times["cc -O0"], 2),
                         "vs cc -O2": round(times["mettle -O"] / times["cc -O2"], 2),
                         "checks": round(times["mettle -O"] / times["mettle -r"], 2)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(PROGRAMS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--target", default="x86_64-linux",
                    choices=("x86_64-linux", "aarch64-linux"))
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = measure(args.names, args.runs, args.target)
    cols = ["program", "mettle -O0", "mettle -O", "mettle -r", "cc -O0", "cc -O2", "vs cc -O0",
            "vs cc -O2", "checks"]
    print(f"host speed, {args.target}, CPU seconds (best of {args.runs}); ratios: mettle -O / C")
    print(" | ".join(f"{c:>11}" for c in cols))
    for r in rows:
        print(" | ".join(f"{r[c]:>11}" for c in cols))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "runs": args.runs, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
