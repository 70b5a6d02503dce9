"""PTX golden tests, with a bless mode (the PTX form of tests/opt/golden.py).

Each `tests/ptx/golden/NAME.mettle` starts with `// gpu-arch: ARCH` (any --gpu-arch value)
and optionally `// flags: -O`; its PTX must equal `tests/ptx/golden/NAME.ptx`, beside it.
`METTLE_BLESS=1 python3 -m pytest tests/ptx/test_golden.py` (or
`python3 tests/ptx/golden.py --bless`) rewrites the `.ptx` files; review the diff in git
before committing them. A case whose profile refuses it holds the diagnostic instead
(`// error[E0504]: ...`), so a refusal is pinned as exactly as an output.
"""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "golden"


def options_of(text: str) -> dict:
    got = {"gpu_arch": None, "optimize": False}
    for line in text.splitlines():
        if line.startswith("// gpu-arch:"):
            got["gpu_arch"] = line.split(":", 1)[1].strip()
        elif line.startswith("// flags:"):
            flags = line.split(":", 1)[1].split()
            unknown = set(flags) - {"-O"}
            if unknown:
                raise ValueError(f"unknown golden-case flags {sorted(unknown)}")
            got["optimize"] = "-O" in flags
    if got["gpu_arch"] is None:
        raise ValueError("a PTX golden case needs a `// gpu-arch: ARCH` line")
    return got


def run_case(path: Path) -> str:
    from toolchain.compiler.diagnostics import CompileError
    from toolchain.compiler.driver import Options, compile_file
    text = path.read_text()
    try:
        return compile_file(str(path), Options(emit="ptx", **options_of(text)),
                            source_text=text).data.decode()
    except CompileError as e:
        return "".join(f"// error[{d.code}]: {d.message}\n" for d in e.diagnostics)


def check(path: Path) -> tuple[bool, str]:
    """(ok, message). Blesses instead of comparing under METTLE_BLESS=1."""
    got = run_case(path)
    gold = path.with_suffix(".ptx")
    if os.environ.get("METTLE_BLESS") == "1":
        gold.write_text(got)
        return True, "blessed"
    if not gold.exists():
        return False, f"no golden file {gold}; run with METTLE_BLESS=1 to create it"
    want = gold.read_text()
    if got == want:
        return True, ""
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        str(gold), "actual", n=2))
    return False, f"{path.name} differs from its golden PTX (METTLE_BLESS=1 rewrites " \
                  f"it):\n{diff[:20000]}"


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    if "--bless" in sys.argv:
        os.environ["METTLE_BLESS"] = "1"
    bad = 0
    for case in sorted(CASES.glob("*.mettle")):
        ok, msg = check(case)
        print(f"{case.name}: {'ok' if ok else 'FAIL'} {msg}")
        bad += not ok
    sys.exit(1 if bad else 0)
