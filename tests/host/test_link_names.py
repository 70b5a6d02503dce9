"""A defined function may name its link symbol (`fn f(...) = "symbol" { ... }`), as an
extern can: the Mettle name stays what callers write, the symbol is what the object file
exports. std/net needs it on Linux, where its `socket`, `send`, ... wrap libc functions of
the same names. Built and run on every host target."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir

from .cross import TARGETS, build_for, run_on, skip_unless_runnable

SOURCE = """import "std/io";
extern fn c_abs(x: int32) -> int32 = "abs";
// `abs` for Mettle callers, `my_abs` in the object: no clash with the C library's abs
export fn abs(x: int32) -> int32 = "my_abs" { return c_abs(x) + 1000; }
extern fn via_symbol(x: int32) -> int32 = "my_abs";
fn main() -> int32 {
    println_int((int64)abs(-5));
    println_int((int64)via_symbol(-7));
    return 0;
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_defined_function_with_its_own_link_name(tmp_path, target):
    skip_unless_runnable(target)
    r = run_on(target, build_for(tmp_path, SOURCE, target, "links"))
    assert (r.returncode, r.stdout.replace("\r\n", "\n")) == (0, "1005\n1007\n")


def test_the_ir_function_carries_the_symbol(tmp_path):
    path = tmp_path / "m.mettle"
    path.write_text(SOURCE)
    module, _ = compile_to_ir(str(path), gpu=False)
    assert module.functions["abs"].symbol == "my_abs"


def test_a_generic_function_takes_no_link_name(tmp_path):
    path = tmp_path / "g.mettle"
    path.write_text('fn id<T>(x: T) -> T = "sym" { return x; }\n')
    with pytest.raises(CompileError) as ei:
        compile_to_ir(str(path), gpu=False)
    d = ei.value.diagnostics[0]
    assert d.code == "E0002" and (d.span.line, d.span.col) == (1, 21)
