"""`mettle test FILE`: running each @test function of the built runner and the report.

The runner program (frontend/testing.py) runs one test per process (`runner INDEX`), so a
crash or a hang fails that test alone. The report on stdout has the reference format:

    (blank line)
    running N tests (native build)
    test NAME ... ok | FAILED | FAILED (returned N; a test must return 0)
                 | FAILED (crashed: SIGNAL) | FAILED (did not finish within S seconds - infinite loop?)
    (blank line)
    P passed[, F failed] (FILE)

A failed assertion is also a located diagnostic on stderr (`error[E0022]: assertion failed
in test 'NAME'` with `left: A, right: B` or `condition was false`). Output a test prints
itself is passed through before its result line. Exit status 1 when any test failed.
"""
from __future__ import annotations

import signal
import subprocess

from .diagnostics import Diagnostic

TIMEOUT_S = 20


def run_one(exe: str, index: int, status_failed: int):
    """(outcome, detail, own_output, assertion) for test `index` of the runner `exe`."""
    try:
        p = subprocess.run([exe, str(index)], capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "FAILED", f"did not finish within {TIMEOUT_S} seconds - infinite loop?", b"", None
    own, returned, failed = [], None, None
    for line in p.stdout.split(b"\n"):
        if line.startswith(b"\x02"):
            returned = int(line[1:])
        elif line.startswith(b"\x01"):
            failed = [int(x) for x in line[1:].split()]
        else:
            own.append(line)
    text = b"\n".join(own).rstrip(b"\n")
    if failed is not None and p.returncode == status_failed:
        return "FAILED", None, text, failed
    if p.returncode < 0:
        try:
            name = signal.Signals(-p.returncode).name
        except ValueError:
            name = f"signal {-p.returncode}"
        return "FAILED", f"crashed: {name}", text, None
    if returned is None or p.returncode != 0:
        return "FAILED", f"exited with status {p.returncode}", text, None
    if returned != 0:
        return "FAILED", f"returned {returned}; a test must return 0", text, None
    return "ok", None, text, None


def assertion_diag(plan, failed: list[int]) -> Diagnostic:
    test, kind, span = plan.asserts[failed[0]]
    label = f"left: {failed[1]}, right: {failed[2]}" if kind == "assert_eq" and \
        len(failed) == 3 else "condition was false"
    return Diagnostic("E0022", f"assertion failed in test '{test}': {label}", span)


def summary(passed: int, failed: int, source: str) -> str:
    return f"{passed} passed" + (f", {failed} failed" if failed else "") + f" ({source})"
