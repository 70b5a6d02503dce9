"""The `pointers` analysis (opt/pointer_facts.py): alignment and disjointness facts, read
from IR text and asked the way passes ask them (`analyses.get("pointers")`)."""
from __future__ import annotations

from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt.analyses import Analyses

IR = """
; module facts
struct %pair { a: i32, b: f64 }
kernel @k(%x: ptr<f32, global>, %y: ptr<f32, global>, %g: ptr<f32>, %s: ptr<%pair>, %i: i32, %j: i64) -> void export {
entry:
  %0 = gpu.alloc ptr<f32, workgroup> {count=64, elem=f32, name=t, space=workgroup}
  %1 = gpu.alloc ptr<f32, private> {count=8, elem=f32, name=u, space=private}
  %2 = mul i32 %i, 4:i32
  %3 = convert i64 %2
  %4 = ptradd ptr<f32, workgroup> %0, %3
  %5 = ptradd ptr<f32, workgroup> %4, 2:i64
  %6 = ptradd ptr<f32, workgroup> %0, %j
  %7 = shl i64 %j, 3:i64
  %8 = byteadd ptr<f32, workgroup> %0, %7
  %9 = ptradd ptr<f32, global> %x, 1:i64
  %10 = ptradd ptr<f32, global> %x, %j
  %11 = ptradd ptr<f32, global> %10, 1:i64
  %12 = fieldptr ptr<f64> %s {index=1}
  %13 = gpu.dynamic_shared ptr<f32, workgroup>
  %14 = gpu.dynamic_shared ptr<i32, workgroup>
  %15 = ptradd ptr<i32, workgroup> %14, 1:i64
  ret
}
"""


def _facts():
    m = parse_module(IR)
    fn = m.functions["k"]
    v = {str(i): ins for i, ins in enumerate(fn.blocks[0].instrs) if ins.op != "ret"}
    v.update({p.name: p for p in fn.params})
    return Analyses(fn, m, gpu=True).get("pointers"), v


def test_alignment():
    f, v = _facts()
    assert f.align(v["x"]) == 4                    # a typed pointer: natural alignment
    assert f.align(v["0"]) == 16                   # gpu.alloc storage
    assert f.align(v["4"]) == 16                   # + (i*4) elements of 4 bytes
    assert f.align(v["5"]) == 8                    # ... + 2 elements
    assert f.align(v["6"]) == 4                    # + j elements: nothing known about j
    assert f.align(v["8"]) == 8                    # + (j << 3) bytes
    assert f.align(v["12"]) == 8                   # field b of {i32, f64} at offset 8
    assert f.multiple(v["2"]) == 4 and f.multiple(v["3"]) == 4


def test_disjointness():
    f, v = _facts()
    assert f.disjoint(v["0"], 4, v["x"], 4)        # workgroup vs global
    assert f.disjoint(v["0"], 4, v["1"], 4)        # two allocations
    assert f.disjoint(v["1"], 4, v["g"], 4)        # a kernel's parameter never points
    assert f.disjoint(v["x"], 4, v["9"], 4)        # x[0] vs x[1]
    assert not f.disjoint(v["x"], 8, v["9"], 4)    # 8 bytes at x[0] cover x[1]
    assert f.disjoint(v["10"], 4, v["11"], 4)      # x[j] vs x[j+1]: same dynamic part
    assert not f.disjoint(v["x"], 4, v["10"], 4)   # x[0] vs x[j]
    assert not f.disjoint(v["x"], 4, v["y"], 4)    # two parameters may alias
    assert f.disjoint(v["13"], 4, v["15"], 4)      # one arena: bytes 0..3 vs 4..7
    assert not f.disjoint(v["13"], 4, v["14"], 4)  # both views start at the arena base
    assert f.disjoint(v["13"], 4, v["0"], 4)       # the arena vs a static allocation


def test_helper_parameters_may_reach_the_callers_storage():
    m = parse_module("""
; module helper
function @h(%p: ptr<f32>) -> void {
entry:
  %0 = gpu.alloc ptr<f32, private> {count=8, elem=f32, name=u, space=private}
  %1 = addrspacecast ptr<f32> %0
  ret
}
""")
    fn = m.functions["h"]
    f = Analyses(fn, m, gpu=True).get("pointers")
    alloc, cast = fn.blocks[0].instrs[:2]
    assert not f.disjoint(alloc, 4, fn.params[0], 4)
    assert not f.disjoint(cast, 4, alloc, 4)         # one object seen through two spaces
    assert f.disjoint(cast, 4, f.parts(cast)[0], 4) is False


def test_bases_without_terms_agree_with_parts():
    """disjoint() finds base objects without the dynamic terms (_base) unless parts()
    would ask multiple(), the widened `x + k` index (a[i + 1] of an i32 i)."""
    m = parse_module("""
; module bases
kernel @k(%x: ptr<f32, global>, %y: ptr<f32, global>, %i: i32) -> void export {
entry:
  %0 = add i32 %i, 1:i32
  %1 = convert i64 %0
  %2 = ptradd ptr<f32, global> %x, %1
  %3 = convert i64 %i
  %4 = ptradd ptr<f32, global> %y, %3
  %5 = add i64 %3, 2:i64
  %6 = ptradd ptr<f32, global> %4, %5
  ret
}
""")
    fn = m.functions["k"]
    f = Analyses(fn, m, gpu=True).get("pointers")
    ins = fn.blocks[0].instrs
    a, b, c = ins[2], ins[4], ins[6]
    assert f._base(a) is None                      # x[i + 1]: parts() asks multiple(i)
    assert f._base(b) is fn.params[1] and f._base(c) is fn.params[1]
    assert not f._mult and not f._parts            # nothing asked of parts() so far
    assert not f.disjoint(a, 4, b, 4)              # two parameters may alias
    assert a in f._parts and b in f._parts         # (one base unknown: parts() for both)
    assert f._base(b) is f.parts(b)[0] and f._base(c) is f.parts(c)[0]
    assert not f.disjoint(b, 4, c, 4)              # y[i] vs y[2i + 2]: terms differ
