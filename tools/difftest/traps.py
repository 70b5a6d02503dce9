"""Programs that must fail a run-time check (docs/reference/runtime-checks.md).

Each case is a random UB-free program of `gen.py` whose `main` ends, before its `return`,
in a seeded access that fails: an index past (or before) a fixed array, a string index
past its length, an index running off an array inside a counted loop (the -O build hoists
that check out of the loop), a null pointer read, written or indexed, or an integer
division or remainder by a run-time zero. The oracle is the program's C translation,
which prints everything the program prints before the failing access; the tester itself
knows the rest: what the trap code prints first, the message
`file:line:col: <what>` on stderr, and exit status 1. Every debug build (-O0 and -O, every
host target) must produce exactly that; release builds of these programs are never run
(the access is undefined behaviour there).
"""
from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass

from .gen import generate
from .runner import OPT_LEVELS, RUN_TIMEOUT_S, compile_mettle, run_c

EXIT = 1          # the documented status of a failed check
KINDS = ("index", "negative", "loop", "loop-print", "global", "string", "null-read",
         "null-write", "null-index", "null-arrow", "div", "rem")


@dataclass
class TrapCase:
    seed: int
    kind: str
    mettle_lines: list          # the program, with the trap code in `main`
    c_src: str                  # the oracle: the program without it
    extra_stdout: str           # what the trap code prints before it fails
    line: int                   # 1-based position of the failing expression
    col: int
    what: str

    def mettle(self) -> str:
        return "\n".join(self.mettle_lines) + "\n"

    def message(self, path: str) -> str:
        return f"{path}:{self.line}:{self.col}: {self.what}\n"


def _trap_code(r: random.Random, kind: str) -> tuple[list, list, str, str, str]:
    """(top-level lines, main lines, marker of the failing expression in its line, what
    it prints first, message). The marker's first occurrence is where the message points."""
    n = r.randint(1, 9)
    k = r.randint(n, n + 6)
    top: list = []
    if kind == "index":
        body = [f"var tr_a: int32[{n}];", f"var tr_i: int64 = {k};", "tr_a[tr_i] = 7;"]
        return top, body, "tr_a[tr_i] = 7", "", f"index out of bounds: index {k}, length {n}"
    if kind == "negative":
        k = -r.randint(1, 5)
        body = [f"var tr_a: int64[{n}];", f"var tr_i: int32 = {k};",
                "print_int(tr_a[tr_i + 0]); newline();"]
        return top, body, "tr_a[tr_i + 0]", "", f"index out of bounds: index {k}, length {n}"
    if kind in ("loop", "loop-print"):
        m = r.randint(n + 1, n + 8)
        lo = r.randint(0, n - 1)
        printing = kind == "loop-print"
        step = "print_int(tr_i); newline(); " if printing else ""
        body = [f"var tr_a: int64[{n}];", "var tr_s: int64 = 0;",
                f"for tr_i in {lo}..{m} {{ {step}tr_a[tr_i] = tr_s; tr_s += tr_i; }}",
                "print_int(tr_s); newline();"]
        out = "".join(f"{i}\n" for i in range(lo, n + 1)) if printing else ""
        return top, body, "tr_a[tr_i] = tr_s", out, \
            f"index out of bounds: index {n}, length {n}"
    if kind == "global":
        top = [f"var tr_g: uint8[{n}];"]
        body = [f"var tr_i: uint32 = {k};", "tr_g[tr_i] = 1;"]
        return top, body, "tr_g[tr_i] = 1", "", f"index out of bounds: index {k}, length {n}"
    if kind == "string":
        text = "abcdefghij"[:n]
        body = [f'var tr_s: string = "{text}";', f"var tr_i: int64 = {k};",
                "print_int(tr_s[tr_i]); newline();"]
        return top, body, "tr_s[tr_i]", "", f"index out of bounds: index {k}, length {n}"
    if kind.startswith("null"):
        top = ["struct TrS { a: int64; b: int32; }", "var tr_cell: TrS;",
               "fn tr_none(k: int64) -> TrS* { if (k > 1000) { return &tr_cell; } return 0; }"]
        body = [f"var tr_p: TrS* = tr_none({k});", 'print_int(7); newline();']
        access = {"null-read": ("print_int(tr_p->a); newline();", "tr_p->a"),
                  "null-write": ("(*tr_p).b = 3;", "*tr_p"),
                  "null-index": ("var tr_q: int32* = (int32*)tr_p; tr_q[2] = 1;",
                                 "tr_q[2]"),
                  "null-arrow": ("tr_p.b = 1;", "tr_p.b")}[kind]
        return top, body + [access[0]], access[1], "7\n", "null pointer dereference"
    op, what = ("/", "division by zero") if kind == "div" else ("%", "remainder by zero")
    t = r.choice(["int32", "int64", "uint16", "uint64"])
    body = [f"var tr_z: {t} = {k};", f"tr_z -= {k};", f"var tr_x: {t} = {n};",
            f"print_int(tr_x {op} tr_z); newline();"]
    return top, body, f"tr_x {op} tr_z", "", what


def trap_case(seed: int, size: int = 1) -> TrapCase:
    r = random.Random(seed * 7919 + 17)
    kind = KINDS[seed % len(KINDS)]
    prog = generate(seed, size)
    lines = prog.mettle().rstrip("\n").split("\n")
    ret = len(lines) - 1 - lines[::-1].index("    return 0;")    # main's final return
    top, body, marker, printed, what = _trap_code(r, kind)
    first_fn = next(i for i, s in enumerate(lines) if s.startswith("fn "))
    body = ["    " + s for s in body]
    new = lines[:first_fn] + top + lines[first_fn:ret] + body + lines[ret:]
    at = ret + len(top)
    for i in range(at, at + len(body)):
        if marker in new[i]:
            return TrapCase(seed, kind, new, prog.c(), printed, i + 1,
                            new[i].index(marker) + 1, what)
    raise AssertionError(f"marker {marker!r} not in the trap code")


def run_case(case: TrapCase, workdir: str, targets, opts=("O0", "O")) -> list[str]:
    """Build and run `case` on every target and level; the list of disagreements."""
    ref = run_c(case.c_src, workdir, f"trap{case.seed}")
    if ref.kind != "ok":
        return [f"seed {case.seed}: the C oracle failed: {ref.kind} {ref.detail[:300]}"]
    src = os.path.join(workdir, f"trap{case.seed}.mettle")
    with open(src, "w") as f:
        f.write(case.mettle())
    want = (EXIT, ref.stdout + case.extra_stdout, case.message(src))
    bad = []
    for t in targets:
        for opt in opts:
            exe = os.path.join(workdir, f"trap{case.seed}.{t.name}.{opt}{t.exe_suffix}")
            rc, diag = compile_mettle(["--build", src, "-o", exe, *t.cli_args,
                                       *OPT_LEVELS[opt]])
            if rc != 0:
                bad.append(f"seed {case.seed} ({case.kind}) {t.name} {opt}: compile "
                           f"failed: {diag[-500:]}")
                continue
            got = _run_capture(t.run_command(exe))
            if got != want:
                bad.append(f"seed {case.seed} ({case.kind}) {t.name} {opt}: expected "
                           f"{want[0]} {want[2]!r}, got {got[0]} {got[2]!r}"
                           + ("" if got[1] == want[1] else " (stdout differs)"))
    return bad


def _run_capture(cmd) -> tuple:
    """(exit status, stdout, stderr) with Windows line ends as Unix ones."""
    env = dict(os.environ, WINEDEBUG="-all")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                           env=env)
    except subprocess.TimeoutExpired:
        return (None, "", "timeout")
    return (r.returncode, r.stdout.replace("\r\n", "\n"), r.stderr.replace("\r\n", "\n"))


__all__ = ["KINDS", "TrapCase", "trap_case", "run_case"]
