"""Later-tier diagnostics: each misuse gives its code at the right line:col (first error)."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir


def first(src: str, gpu: bool = False):
    with pytest.raises(CompileError) as ei:
        compile_to_ir("t.mettle", gpu=gpu, source_text=src)
    d = ei.value.diagnostics[0]
    return d.code, d.span.line, d.span.col, d.message


def ok(src: str, gpu: bool = False):
    return compile_to_ir("t.mettle", gpu=gpu, source_text=src)[0]


MAIN = "\nfn main() -> int32 { return 0; }\n"

NEG = [
    # static_assert
    ("struct H { a: int64; }\nstatic_assert(sizeof(H) == 4);" + MAIN,
     ("E0017", 2, 15, "static_assert failed")),
    ("var g: int32 = 1;\nstatic_assert(g == 1);" + MAIN,
     ("E0017", 2, 15, "must be a compile-time integer")),
    ("static_assert(1, 2);" + MAIN, ("E0017", 1, 1, "exactly one condition")),
    ("fn main() -> int32 {\n  static_assert((3 & 1) == 0);\n  return 0;\n}",
     ("E0017", 2, 17, "static_assert failed")),
    # qualified enum values
    ("enum C { R, G }\nfn main() -> int32 {\n  return C.B;\n}",
     ("E0101", 3, 10, "enum `C` has no variant `B`")),
    # pointer truthiness: only `!p`
    ("fn main() -> int32 {\n  var p: int32* = 0;\n  if (p) { return 1; }\n  return 0;\n}",
     ("E0016", 3, 7, "a pointer is not a condition")),
]


@pytest.mark.parametrize("src,want", NEG, ids=[f"neg{i}" for i in range(len(NEG))])
def test_later_tier_diagnostic(src, want):
    code, line, col, msg = first(src)
    assert (code, line, col) == want[:3] and want[3] in msg, (code, line, col, msg)


def test_static_assert_folds_bitwise_sizeof_and_qualified_enums():
    ok("enum M { A = 4, B }\nconst N = 8;\nstatic_assert((N & 7) == 0 && (1 << 3) == N);\n"
       "static_assert(M.B == 5 && sizeof(int32[4]) == 16);" + MAIN)


def test_aggregate_elements_may_use_sizeof_and_qualified_enums():
    ok("enum M { A = 4, B }\nstruct P { a: int64; b: int64; }\n"
       "var g: int64[2] = [sizeof(P), M.B];\n"
       "fn main() -> int32 {\n  var l: P = { a: sizeof(P), b: M.A };\n"
       "  return (int32)(l.a + g[1]);\n}")


def test_not_on_pointer_is_allowed():
    ok("fn main() -> int32 {\n  var p: int32* = 0;\n  if (!p) { return 1; }\n"
       "  var q: fn() -> int32 = 0;\n  return !q + !!p;\n}")
