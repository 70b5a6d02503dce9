"""The host test corpus (the programs of test_programs.py, test_arith.py and
test_convert.py) built for every other host target and run there (AArch64 under qemu,
Windows under Wine where it runs): stdout and exit status must be identical to the
x86-64 Linux build of the same source. One allowance: the sign of a NaN produced by the
hardware differs (x86's default NaN is negative, AArch64's positive), and the C runtimes
spell NaNs differently (glibc "-nan", the Universal CRT "-nan(ind)"), so every NaN spelling
compares equal, as the x86-64 oracle in test_arith.py already treats the sign."""
from __future__ import annotations

import pytest

from . import test_arith, test_convert, test_programs
from .cross import build_for, run_on, skip_unless_runnable
import toolchain.compiler.targets.arm64  # noqa: F401  (compiles host code: the backends,
import toolchain.compiler.targets.x86_64  # noqa: F401  which the registry loads by name)
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401


def _int_program() -> str:
    src, calls = [test_arith.PRINTF], []
    for bits, signed in test_arith.INT_TYPES:
        src.append(test_arith.int_function(bits, signed))
        for a, b in test_arith.samples(bits, signed):
            calls.append(f"    ops_{test_arith.tname(bits, signed)}({a}, {b});")
    src.append("fn main() -> int32 {\n" + "\n".join(calls) + "\n    return 0;\n}\n")
    return "\n".join(src)


def _int_casts() -> str:
    body, _ = test_convert.int_casts()
    return test_arith.PRINTF + "fn main() -> int32 {\n" + body + "\n    return 0;\n}\n"


# Addresses of imported functions: through the GOT / import address table in code, and as
# a data word the loader relocates (a PLT entry or Windows import thunk).
IMPORTED_FUNCTION_POINTERS = """
extern fn puts(s: cstring) -> int32;
var HOOK: fn(cstring) -> int32 = puts;
fn main() -> int32 {
    var g: fn(cstring) -> int32 = puts;
    g("through the GOT or the IAT");
    HOOK("through a data pointer");
    return 5;
}
"""

CORPUS = {
    "imported_function_pointers": IMPORTED_FUNCTION_POINTERS,
    "recursion": test_programs.RECURSION,
    "structs": test_programs.STRUCTS,
    "pointers": test_programs.POINTERS,
    "strings": test_programs.STRINGS,
    "control": test_programs.CONTROL,
    "many_args": test_programs.MANY_ARGS,
    "concat": test_programs.CONCAT,
    "int_operators": _int_program(),
    "float_operators": test_arith.FLOAT_SRC,
    "int_casts": _int_casts(),
    "float_conversions": test_convert.FLOAT_SRC,
}


@pytest.mark.parametrize("target", ["aarch64-linux", "x86_64-windows"])
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_same_output_as_x86_64(tmp_path, name, target):
    skip_unless_runnable(target)
    source = CORPUS[name]
    ref = run_on("x86_64-linux", build_for(tmp_path, source, "x86_64-linux", name))
    out = run_on(target, build_for(tmp_path, source, target, name))
    assert (_nan(out.stdout), out.returncode) == (_nan(ref.stdout), ref.returncode), out.stderr


def _nan(text: str) -> str:
    """glibc prints a NaN as "nan"/"-nan", the Universal CRT as "nan"/"-nan(ind)"."""
    return text.replace("(ind)", "").replace("-nan", "nan")


@pytest.mark.parametrize("target", ["aarch64-linux", "x86_64-windows"])
def test_file_io_program(tmp_path, target):
    skip_unless_runnable(target)
    exe = build_for(tmp_path, test_programs.FILE_IO, target, "file_io")
    data = tmp_path / "data.bin"
    out = run_on(target, exe, args=[data])
    want = bytes(i * 7 % 251 for i in range(1000))
    assert out.returncode == 0, out.stderr
    assert data.read_bytes() == want
    assert [int(v) for v in out.stdout.split()] == [1000, 1000, 1, sum(want)]
