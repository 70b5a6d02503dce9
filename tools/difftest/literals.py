"""Programs with integer literals at and beyond the widest type (docs/reference/literals.md).

Each case is a random UB-free program of `gen.py` whose `main` gains, before its `return`,
a `uint64` variable initialised with a literal spelled in decimal, hex or binary:
- `fits`: the literal is 2^64 - 1 (or a random value of the top bit's range); the program
  must build on every target and level and print the C oracle's output followed by what the
  added line prints (the value shifted right by one, which int64 printing can show);
- `over`: the literal is 2^64 or more; every build must fail with the located E0005 at the
  literal, never wrap, and write no executable.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass

from .gen import generate
from .runner import OPT_LEVELS, compile_mettle, run_c
from .traps import _run_capture

KINDS = ("fits", "over")
U64_MAX = (1 << 64) - 1


@dataclass
class LiteralCase:
    seed: int
    kind: str
    mettle_lines: list
    c_src: str
    extra_stdout: str           # what the added line prints (fits)
    line: int                   # 1-based position of the literal
    col: int

    def mettle(self) -> str:
        return "\n".join(self.mettle_lines) + "\n"


def spell(r: random.Random, value: int) -> str:
    """`value` in a random base (hex digits in either case)."""
    base = r.choice(("dec", "hex", "bin"))
    digits = {"dec": str(value), "hex": format(value, r.choice("xX")),
              "bin": format(value, "b")}[base]
    return {"dec": "", "hex": "0x", "bin": "0b"}[base] + digits


def literal_case(seed: int, size: int = 1) -> LiteralCase:
    r = random.Random(seed * 104729 + 3)
    kind = KINDS[seed % len(KINDS)]
    if kind == "fits":
        value = r.choice((U64_MAX, r.randint(1 << 63, U64_MAX)))
    else:
        value = r.choice((1 << 64, r.randint(1 << 64, 1 << 70), 10 ** r.randint(20, 30)))
    text = spell(r, value)
    prog = generate(seed, size)
    lines = prog.mettle().rstrip("\n").split("\n")
    ret = len(lines) - 1 - lines[::-1].index("    return 0;")    # main's final return
    body = [f"    var lr_v: uint64 = {text};",
            "    print_int((int64)(lr_v >> 1)); newline();"]
    new = lines[:ret] + body + lines[ret:]
    printed = f"{value >> 1}\n" if kind == "fits" else ""
    return LiteralCase(seed, kind, new, prog.c(), printed, ret + 1,
                       body[0].index(text) + 1)


def run_case(case: LiteralCase, workdir: str, targets, opts=("O0", "O")) -> list[str]:
    """Build (and for `fits`, run) `case` on every target and level; the disagreements."""
    src = os.path.join(workdir, f"lit{case.seed}.mettle")
    with open(src, "w") as f:
        f.write(case.mettle())
    ref = None
    if case.kind == "fits":
        ref = run_c(case.c_src, workdir, f"lit{case.seed}")
        if ref.kind != "ok":
            return [f"seed {case.seed}: the C oracle failed: {ref.kind} {ref.detail[:300]}"]
    bad = []
    for t in targets:
        for opt in opts:
            exe = os.path.join(workdir, f"lit{case.seed}.{t.name}.{opt}{t.exe_suffix}")
            rc, diag = compile_mettle(["--build", src, "-o", exe, *t.cli_args,
                                       *OPT_LEVELS[opt]])
            where = f"seed {case.seed} ({case.kind}) {t.name} {opt}"
            if case.kind == "over":
                located = f"{src}:{case.line}:{case.col}"
                if rc != 1 or "error[E0005]" not in diag or located not in diag:
                    bad.append(f"{where}: expected E0005 at {located}, got exit {rc}: "
                               f"{diag[-400:]}")
                elif os.path.exists(exe):
                    bad.append(f"{where}: a refused build left {exe}")
                continue
            if rc != 0:
                bad.append(f"{where}: compile failed: {diag[-500:]}")
                continue
            got = _run_capture(t.run_command(exe))
            want = (0, ref.stdout + case.extra_stdout)
            if got[:2] != want:
                bad.append(f"{where}: expected exit 0 and {want[1][-80:]!r}, got {got[0]} "
                           f"{got[1][-80:]!r}")
    return bad


__all__ = ["KINDS", "LiteralCase", "literal_case", "run_case"]
