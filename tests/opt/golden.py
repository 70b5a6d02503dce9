"""IR-text golden tests of single passes, with a bless mode.

Each `tests/opt/cases/NAME.ir` starts with `; passes: a, b` (the passes to run, in order)
and holds a module in `--dump-ir` text (a `; target: ptx` line runs the passes on GPU code
for PTX). The result, printed, must equal
`tests/opt/golden/NAME.ir`. `METTLE_BLESS=1 python3 -m pytest tests/opt/test_golden.py`
(or `python3 tests/opt/golden.py --bless`) rewrites the golden files; review the diff in
git before committing them. Value numbers are the printer's (definition order), never
hand-written register names.
"""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
GOLDEN = HERE / "golden"


def passes_of(text: str) -> list[str]:
    for line in text.splitlines():
        if line.startswith("; passes:"):
            return [p.strip() for p in line[len("; passes:"):].split(",") if p.strip()]
    raise ValueError("a case needs a `; passes: ...` line")


def analyses_args(text: str) -> dict:
    """`; target: ptx` runs the passes on GPU code for PTX (the facts its registry entry
    gives the optimizer); without it a case is host code for no particular target."""
    from toolchain.compiler.opt.analyses import TargetInfo
    for line in text.splitlines():
        if line.startswith("; target:"):
            name = line[len("; target:"):].strip()
            if name != "ptx":
                raise ValueError(f"unknown case target {name!r}")
            return {"gpu": True, "target": TargetInfo(32, "ptx", True)}
    return {}


def run_case(path: Path) -> str:
    from toolchain.compiler.ir import format_module, verify_function
    from toolchain.compiler.ir.reader import parse_module
    from toolchain.compiler.opt.analyses import Analyses
    from toolchain.compiler.opt.manager import PASSES
    text = path.read_text()
    m = parse_module(text)
    for fn in m.functions.values():
        if not fn.blocks:
            continue
        verify_function(fn, ssa=True)
        an = Analyses(fn, m, **analyses_args(text))
        for name in passes_of(text):
            p = PASSES[name]
            if p.run(fn, an):
                an.after_pass(p.invalidates)
            verify_function(fn, ssa=True)
    header = "".join(l + "\n" for l in text.splitlines()
                     if l.startswith(("; passes:", "; target:")))
    out = header + format_module(m)
    if len(m.remarks):
        out += "".join("; remark: " + l + "\n" for l in m.remarks.format().splitlines())
    return out


def check(path: Path) -> tuple[bool, str]:
    """(ok, message). Blesses instead of comparing under METTLE_BLESS=1."""
    got = run_case(path)
    gold = GOLDEN / path.name
    if os.environ.get("METTLE_BLESS") == "1":
        gold.write_text(got)
        return True, "blessed"
    if not gold.exists():
        return False, f"no golden file {gold}; run with METTLE_BLESS=1 to create it"
    want = gold.read_text()
    if got == want:
        return True, ""
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        str(gold), "actual"))
    return False, f"{path.name} differs from its golden file (METTLE_BLESS=1 rewrites " \
                  f"it):\n{diff}"


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    if "--bless" in sys.argv:
        os.environ["METTLE_BLESS"] = "1"
    bad = 0
    for case in sorted(CASES.glob("*.ir")):
        ok, msg = check(case)
        print(f"{case.name}: {'ok' if ok else 'FAIL'} {msg}")
        bad += not ok
    sys.exit(1 if bad else 0)
