"""Build one generated program with the C oracle and with Mettle (each host target, each
optimization level), run them, and compare the outputs.

The oracle is the program's C translation compiled by the system C compiler with
`-O0 -fwrapv -ffp-contract=off` (two's-complement signed overflow, no FMA contraction: the
Mettle semantics). Mettle is compiled in this process through the CLI's own entry point
(`cli.main`), which saves a Python start per build.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from dataclasses import dataclass

from .targets import HostTarget

CC_FLAGS = ["-O0", "-fwrapv", "-ffp-contract=off", "-w", "-std=gnu11"]
RUN_TIMEOUT_S = 20
OPT_LEVELS = {"O0": (), "O": ("-O",)}


@dataclass
class Outcome:
    kind: str           # "ok" | "compile-error" | "compiler-crash" | "run-error" | "timeout"
    stdout: str = ""
    detail: str = ""

    def same(self, other: "Outcome") -> bool:
        return self.kind == other.kind == "ok" and self.stdout == other.stdout


@dataclass
class Mismatch:
    target: str
    opt: str
    expected: Outcome
    got: Outcome

    def summary(self) -> str:
        if self.got.kind != "ok":
            return f"{self.target} {self.opt}: {self.got.kind}: {self.got.detail[:300]}"
        exp, got = self.expected.stdout.splitlines(), self.got.stdout.splitlines()
        for i, (a, b) in enumerate(zip(exp, got)):
            if a != b:
                return f"{self.target} {self.opt}: output line {i + 1}: C {a}, Mettle {b}"
        return f"{self.target} {self.opt}: C printed {len(exp)} lines, Mettle {len(got)}"


def cc_path() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def _run(cmd: list[str]) -> Outcome:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Outcome("timeout", detail=f"ran past {RUN_TIMEOUT_S}s")
    if r.returncode != 0:
        return Outcome("run-error", r.stdout, f"exit status {r.returncode}: {r.stderr[-300:]}")
    return Outcome("ok", r.stdout)


def run_c(c_src: str, workdir: str, name: str = "ref") -> Outcome:
    src, exe = os.path.join(workdir, name + ".c"), os.path.join(workdir, name)
    with open(src, "w") as f:
        f.write(c_src)
    r = subprocess.run([cc_path(), *CC_FLAGS, src, "-o", exe], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return Outcome("compile-error", detail=r.stderr[-2000:])
    return _run([exe])


def compile_mettle(argv: list[str]) -> tuple[int, str]:
    """Run the CLI in this process; returns (exit status, diagnostics)."""
    from toolchain.compiler import cli
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
            rc = cli.main(argv)
    except SystemExit as e:           # argparse refusing a flag
        rc = e.code if isinstance(e.code, int) else 2
    except Exception as e:            # noqa: BLE001  a compiler crash is a finding
        return 99, f"compiler crashed: {type(e).__name__}: {e}"
    return rc, err.getvalue()


def run_mettle(m_src: str, workdir: str, target: HostTarget, opt: str,
               name: str = "prog") -> Outcome:
    src = os.path.join(workdir, name + ".mettle")
    exe = os.path.join(workdir, f"{name}.{target.name}.{opt}{target.exe_suffix}")
    with open(src, "w") as f:
        f.write(m_src)
    rc, diag = compile_mettle(["--build", src, "-o", exe, *target.cli_args,
                               *OPT_LEVELS[opt]])
    if rc != 0:
        crashed = rc == 99 or "Traceback" in diag or "internal error" in diag
        return Outcome("compiler-crash" if crashed else "compile-error", detail=diag[-2000:])
    return _run(target.run_command(exe))


def check_program(m_src: str, c_src: str, workdir: str, targets, opts) -> tuple[Outcome,
                                                                                list[Mismatch]]:
    """The C reference outcome and every (target, opt) whose Mettle build disagrees."""
    ref = run_c(c_src, workdir)
    bad = []
    if ref.kind != "ok":
        return ref, bad
    for t in targets:
        for opt in opts:
            got = run_mettle(m_src, workdir, t, opt)
            if not ref.same(got):
                bad.append(Mismatch(t.name, opt, ref, got))
    return ref, bad


def check_batch(progs, workdir: str, targets, opts):
    """Run `progs` as one executable per (target, opt) and one C program; fall back to one
    program at a time when anything in the batch fails as a whole, and confirm every
    disagreement on the program alone. Returns {seed: (reference, [Mismatch])}."""
    from .program import batch_c, batch_mettle, split_batch
    results = {}
    ref = run_c(batch_c(progs), workdir, "batch")
    fallback = ref.kind != "ok"
    suspects = set()
    if not fallback:
        want = split_batch(ref.stdout)
        for t in targets:
            for opt in opts:
                got = run_mettle(batch_mettle(progs), workdir, t, opt, "batch")
                if got.kind != "ok":
                    fallback = True
                    break
                parts = split_batch(got.stdout)
                suspects |= {p.seed for p in progs if parts.get(p.seed) != want.get(p.seed)}
            if fallback:
                break
    for p in progs:
        if fallback or p.seed in suspects:
            results[p.seed] = check_program(p.mettle(), p.c(), workdir, targets, opts)
        else:
            results[p.seed] = (Outcome("ok", want[p.seed]), [])
    return results
