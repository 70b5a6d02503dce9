"""`@unroll(n)` range loops: full unrolling with constant bounds, plain loops otherwise."""
import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import format_module

SRC = """
kernel k(out: int32*, n: int32) {
  var acc: int32 = 0;
  @unroll(UNROLL) for k in 0..4 {
    if (k == 2) { continue; }
    acc = acc + k * 10;
  }
  @unroll(4) for j in 0..n { acc = acc + j; }
  out[0] = acc;
}
"""


def lower(src):
    return format_module(compile_to_ir("k.mettle", gpu=True, source_text=src)[0])


def test_constant_range_is_fully_unrolled():
    text = lower(SRC.replace("UNROLL", "8"))
    kfn = text[text.index("kernel @k"):]
    assert kfn.count("unroll.next") >= 4            # one continuation per copy
    for i in range(4):
        assert f"local.set $k, {i}:i32" in kfn
    assert "loop.cond" in kfn                       # the runtime-bound loop stays a loop


def test_trip_count_above_the_unroll_factor_stays_a_loop():
    text = lower(SRC.replace("UNROLL", "2"))
    assert "unroll.next" not in text


@pytest.mark.parametrize("n", ["1", "17"])
def test_unroll_count_out_of_range_is_located(n):
    with pytest.raises(CompileError) as e:
        compile_to_ir("k.mettle", gpu=True, source_text=SRC.replace("UNROLL", n))
    d = e.value.diagnostics[0]
    assert (d.code, d.span.line) == ("E0011", 4)
