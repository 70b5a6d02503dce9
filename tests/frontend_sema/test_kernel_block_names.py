"""`kernel(block = NAME)`: a block dimension named by a top-level integer const of the
kernel's module (frontend/kernel_block.py), --const overrides included; anything else is a
located E0303."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir

SRC = """const BLOCK_M = 64;
const WORK_ITEMS = 2 * BLOCK_M;
kernel(block = WORK_ITEMS) one(a: float32*) { a[thread.x] = 1.0; }
kernel(block = (BLOCK_M, 2)) two(a: float32*) { a[thread.x] = 1.0; }
extern kernel(block = BLOCK_M) three(a: float32*);
"""


def blocks(src: str, consts=()) -> dict:
    module = compile_to_ir("k.mettle", gpu=True, source_text=src, consts=consts)[0]
    return {n: d.block_shape for n, d in module.kernel_decls.items()}


def test_named_dimensions_take_the_consts_values():
    assert blocks(SRC) == {"one": (128, 1, 1), "two": (64, 2, 1), "three": (64, 1, 1)}


def test_const_overrides_reach_the_block():
    assert blocks(SRC, consts=(("BLOCK_M", "32"),)) == \
        {"one": (64, 1, 1), "two": (32, 2, 1), "three": (32, 1, 1)}
    assert blocks(SRC, consts=(("WORK_ITEMS", "256"),))["one"] == (256, 1, 1)


@pytest.mark.parametrize("decl,dim,message", [
    ("", "NOPE", "kernel block dimension `NOPE` is not a top-level integer const"),
    ("const X = 1.5;\n", "X", "kernel block dimension `X` is not a top-level integer const"),
    ("const A = B;\nconst B = A;\n", "A", "kernel block dimension `A` is not"),
    ("const BIG = 2048;\n", "BIG", "kernel block (2048, 1, 1) is invalid"),
])
def test_a_name_that_is_not_a_usable_integer_const_is_e0303(decl, dim, message):
    src = decl + f"kernel(block = {dim}) k(a: float32*) {{ a[thread.x] = 1.0; }}\n"
    with pytest.raises(CompileError) as e:
        blocks(src)
    d = next(d for d in e.value.diagnostics if d.code == "E0303")
    assert message in d.message
    assert d.span.line == decl.count("\n") + 1
