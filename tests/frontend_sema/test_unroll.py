"""`@unroll(n)`: the frontend lowers the loop plainly with the count on its exit test, and
the optimizer's unroll pass (run with and without -O) unrolls it fully when the trip count
is a constant of at most n. Results are checked by interpreting the IR before and after."""
import pytest

from tests.opt.interp import run as interpret
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import format_module
from toolchain.compiler.opt.manager import honour_directives, optimize

SRC = """
fn f(n: int32) -> int32 {
  var acc: int32 = 0;
  @unroll(UNROLL) for k in 0..4 {
    if (k == 2) { continue; }
    acc = acc + k * 10;
  }
  @unroll(4) for j in 0..n { acc = acc + j; }
  return acc;
}
"""


def lower(src):
    return compile_to_ir("k.mettle", gpu=False, source_text=src)[0]


def results(module, inputs=(0, 1, 5, 9)):
    fn = module.functions["f"]
    return [interpret(fn, [n])[0] for n in inputs]


def test_frontend_leaves_the_count_on_the_exit_test():
    text = format_module(lower(SRC.replace("UNROLL", "8")))
    assert text.count("{unroll=8}") == 1 and text.count("{unroll=4}") == 1
    assert "unroll.next" not in text                # no frontend copies any more


@pytest.mark.parametrize("optimized", [False, True])
def test_constant_range_is_fully_unrolled(optimized):
    module = lower(SRC.replace("UNROLL", "8"))
    before = results(module)
    if optimized:
        optimize(module, gpu=False)
    else:
        honour_directives(module, gpu=False)
    text = format_module(module)
    assert text.count("{unroll=8}") == 0            # the constant loop is gone
    assert "{unroll=4}" in text                     # the runtime-bound loop stays a loop
    assert results(module) == before == [40, 40, 50, 76]
    lines = [r.text for r in module.remarks.items if r.pass_name == "unroll"]
    assert "loop unrolled fully (4 iterations, @unroll(8))" in lines
    assert any("@unroll(4) loop not unrolled: the trip count is not a compile-time "
               "constant" in t for t in lines)


def test_trip_count_above_the_unroll_count_stays_a_loop():
    module = lower(SRC.replace("UNROLL", "2"))
    before = results(module)
    honour_directives(module, gpu=False)
    assert "{unroll=2}" in format_module(module)
    assert results(module) == before
    assert any("4 iterations exceed @unroll(2)" in r.text for r in module.remarks.items)


@pytest.mark.parametrize("n", ["1", "17"])
def test_unroll_count_out_of_range_is_located(n):
    with pytest.raises(CompileError) as e:
        compile_to_ir("k.mettle", gpu=True, source_text=SRC.replace("UNROLL", n))
    d = e.value.diagnostics[0]
    assert (d.code, d.span.line) == ("E0011", 4)
