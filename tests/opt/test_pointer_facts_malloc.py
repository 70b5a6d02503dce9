"""Pointer facts on host code: storage from two different malloc/calloc calls is two
objects, seen through casts, address arithmetic and pointer induction variables; one call
against itself, or a phi that may hold either, is not."""
from __future__ import annotations

from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt.analyses import Analyses

IR = """
; module heap
extern @malloc(%size: i64) -> ptr<u8>
extern @calloc(%n: i64, %size: i64) -> ptr<u8>
extern @other(%size: i64) -> ptr<u8>
function @f(%n: i64, %q: ptr<f64>, %c: bool) -> void {
entry:
  %0 = call ptr<u8> @malloc, 800:i64
  %1 = bitcast ptr<f64> %0
  %2 = call ptr<u8> @calloc, 100:i64, 8:i64
  %3 = bitcast ptr<f64> %2
  %4 = call ptr<u8> @other, 800:i64
  %5 = bitcast ptr<f64> %4
  %6 = ptradd ptr<f64> %1, %n
  %7 = bitcast ptr<f64> %0
  br loop
loop:
  %8 = phi ptr<f64> [%6, entry], [%10, loop]
  %9 = phi ptr<f64> [%1, entry], [%3, loop]
  %10 = ptradd ptr<f64> %8, 1:i64
  cbr %c, loop, done
done:
  ret
}
"""


def _facts():
    m = parse_module(IR)
    fn = m.functions["f"]
    values = [i for b in fn.blocks for i in b.instrs if i.op not in ("br", "cbr", "ret")]
    v = {str(k): ins for k, ins in enumerate(values)}      # %k of the text
    v["q"] = fn.params[1]
    return Analyses(fn, m).get("pointers"), v


def test_two_allocator_calls_are_two_objects():
    f, v = _facts()
    assert f.disjoint(v["6"], 8, v["3"], 8)          # malloc + n against calloc
    assert f.disjoint(v["8"], 8, v["3"], 8)          # a pointer IV over the malloc'd block
    assert f.disjoint(v["10"], 8, v["3"], 8)


def test_what_is_not_known_apart():
    f, v = _facts()
    assert not f.disjoint(v["1"], 8, v["5"], 8)      # not an allocator we know
    assert not f.disjoint(v["1"], 8, v["q"], 8)      # a parameter may point anywhere
    assert not f.disjoint(v["6"], 8, v["7"], 8)      # the same call, other casts
    assert not f.disjoint(v["9"], 8, v["3"], 8)      # a phi of both blocks
    assert not f.disjoint(v["8"], 8, v["1"], 8)
