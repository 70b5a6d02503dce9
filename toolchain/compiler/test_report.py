"""`mettle test FILE`: running each @test function of the built runner and the report.

The runner program (frontend/testing.py) runs one test per process (`runner INDEX`), so a
crash or a hang fails that test alone. The report on stdout has the reference format:

    (blank line)
    running N tests (native build)
    test NAME ... ok | FAILED | FAILED (returned N; a test must return 0)
                 | FAILED (crashed: SIGNAL) | FAILED (did not finish within S seconds - infinite loop?)
                 | FAILED (crashed: runtime guard trap - WHAT) | FAILED (crashed: stack overflow)
    (blank line)
    P passed[, F failed] (FILE)

A failed assertion is also a located diagnostic on stderr (`error[E0022]: assertion failed
in test 'NAME'` with `left: A, right: B` or `condition was false`); so is the located line
of a failed run-time check (`app.mettle:4:5: null pointer dereference`: the runner is a
checked build, and its checks exit with their own status, see frontend/testing.py). Output a
test prints itself is passed through before its result line. Exit status 1 when any test
failed.
"""
from __future__ import annotations

import re
import signal
import subprocess

from .diagnostics import Diagnostic
from .ir.stack_guard import MESSAGE as STACK_MESSAGE

TIMEOUT_S = 20
_CHECK_LINE = re.compile(rb":\d+:\d+: (.+)$")     # file:line:col: what (ir/checks.py)


def run_one(exe: str, index: int, status_failed: int, status_check: int):
    """(outcome, detail, own_output, assertion, check_line) for test `index` of the runner
    `exe`; check_line is the located message of a failed run-time check, else None."""
    try:
        p = subprocess.run([exe, str(index)], capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return ("FAILED", f"did not finish within {TIMEOUT_S} seconds - infinite loop?", b"",
                None, None)
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
        return "FAILED", None, text, failed, None
    lines = p.stderr.rstrip(b"\n").split(b"\n")
    if p.returncode == status_check and lines[-1] == STACK_MESSAGE.rstrip(b"\n"):
        return ("FAILED", "crashed: stack overflow", text, None,     # ir/stack_guard.py
                lines[-1].decode("utf-8", "replace"))
    trap = _CHECK_LINE.search(lines[-1]) if p.returncode == status_check else None
    if trap is not None:
        what = trap.group(1).decode("utf-8", "replace")
        return ("FAILED", f"crashed: runtime guard trap - {what}", text, None,
                lines[-1].decode("utf-8", "replace"))
    if p.returncode < 0:
        try:
            name = signal.Signals(-p.returncode).name
        except ValueError:
            name = f"signal {-p.returncode}"
        return "FAILED", f"crashed: {name}", text, None, None
    if returned is None or p.returncode != 0:
        return "FAILED", f"exited with status {p.returncode}", text, None, None
    if returned != 0:
        return "FAILED", f"returned {returned}; a test must return 0", text, None, None
    return "ok", None, text, None, None


def assertion_diag(plan, failed: list[int]) -> Diagnostic:
    test, kind, span = plan.asserts[failed[0]]
    label = f"left: {failed[1]}, right: {failed[2]}" if kind == "assert_eq" and \
        len(failed) == 3 else "condition was false"
    return Diagnostic("E0022", f"assertion failed in test '{test}': {label}", span)


def summary(passed: int, failed: int, source: str) -> str:
    return f"{passed} passed" + (f", {failed} failed" if failed else "") + f" ({source})"
