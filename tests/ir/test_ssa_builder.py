"""SSA construction in the Builder (ir/ssa_builder.py): what GPU -O's frontend builds.

The property: a random program built as SSA values computes exactly what the same
program built in slot form computes (tests/opt/randprog.py draws the same program either
way), and its IR passes the SSA verifier. Beside it: the frontend's SSA mode on real
sources, the language checks that must not see a variable as a literal, and the builder's
refusals.
"""
from __future__ import annotations

import glob
import os

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import I32, VOID, Builder, IRTypeError, Module, verify_function
from toolchain.compiler.ir.ssa_builder import SSABuilder
from tests.opt.property import execute
from tests.opt.randprog import INPUTS, random_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _slot_ops(fn) -> list[str]:
    return [i.op for i in fn.instructions() if i.op in ("local.get", "local.set")]


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_compute_the_same_in_ssa_form(seed):
    slots = random_module(seed).functions["f"]
    ssa_module = random_module(seed, ssa=True)
    for fn in ssa_module.functions.values():
        verify_function(fn, ssa=True)
        assert _slot_ops(fn) == [] and fn.locals == []
    ssa = ssa_module.functions["f"]
    for inp in INPUTS:
        assert execute(ssa, inp) == execute(slots, inp), f"seed {seed}, input {inp}"


def test_loops_get_phis_and_invariant_reads_get_none():
    """A loop-carried variable gets one header phi; a variable only read in the loop gets
    none (its trivial header phi is removed and its uses rewritten)."""
    m = Module("m")
    b = Builder(m)
    fn = b.function("f", [("n", I32)], I32)
    b.ssa = SSABuilder()
    b.position_at_end(b.append_block(fn, "entry"))
    i, k = b.local(fn, I32, "i"), b.local(fn, I32, "k")
    b.local_set(i, b.const(I32, 0))
    b.local_set(k, b.const(I32, 7))
    head, body, done = (b.append_block(fn, n) for n in ("head", "body", "done"))
    b.ssa.defer_seal(head)
    b.br(head)
    b.position_at_end(head)
    b.cbr(b.cmp("lt", b.local_get(i), fn.params[0]), body, done)
    b.position_at_end(body)
    b.local_set(i, b.add(b.local_get(i), b.local_get(k)))
    b.br(head)
    b.ssa.seal(head)
    b.position_at_end(done)
    b.ret(b.local_get(i))
    b.ssa.finish(fn)
    verify_function(fn, ssa=True)
    phis = [ins for ins in fn.instructions() if ins.op == "phi"]
    assert [p.block for p in phis] == [head]
    add = next(ins for ins in body.instrs if ins.op == "add")
    assert add.operands[0] is phis[0] and add.operands[1].value == 7


def test_long_chains_need_no_recursion():
    """3000 merges in a row between a write and the read: built iteratively."""
    m = Module("m")
    b = Builder(m)
    fn = b.function("f", [("n", I32)], I32)
    b.ssa = SSABuilder()
    b.position_at_end(b.append_block(fn, "entry"))
    x = b.local(fn, I32, "x")
    b.local_set(x, fn.params[0])
    for _ in range(3000):
        then, join = b.append_block(fn, "t"), b.append_block(fn, "j")
        b.cbr(b.cmp("lt", fn.params[0], b.const(I32, 3)), then, join)
        b.position_at_end(then)
        b.br(join)
        b.position_at_end(join)
    b.ret(b.local_get(x))
    b.ssa.finish(fn)
    assert fn.blocks[-1].instrs[-1].operands[0] is fn.params[0]     # every phi was trivial
    assert not any(ins.op == "phi" for ins in fn.instructions())


def test_an_edge_into_a_sealed_block_is_refused():
    m = Module("m")
    b = Builder(m)
    fn = b.function("f", [], VOID)
    b.ssa = SSABuilder()
    entry, head = b.append_block(fn, "entry"), b.append_block(fn, "head")
    b.position_at_end(entry)
    b.br(head)
    b.position_at_end(head)             # sealed: a loop header must be deferred first
    with pytest.raises(IRTypeError, match="sealed"):
        b.br(head)


def _gpu_sources() -> list[str]:
    found = sorted(glob.glob(os.path.join(ROOT, "tests/data/gpu_suite/*.mettle")))
    found += sorted(glob.glob(os.path.join(ROOT, "bench/kernels/*.mettle")))
    return found


@pytest.mark.parametrize("path", _gpu_sources(), ids=os.path.basename)
def test_frontend_ssa_mode_builds_verified_ssa(path):
    module, _ = compile_to_ir(path, gpu=True, ssa=True)
    for fn in module.functions.values():
        if fn.is_extern:
            continue
        verify_function(fn, ssa=True)
        assert _slot_ops(fn) == [], fn.name
        assert not any(l.type.is_scalar for l in fn.locals), fn.name


_INT_AS_POINTER = """
kernel k(out: float32*) {
  var z: int64 = 0;
  var p: float32* = z;
  out[0] = 1.0;
}
"""


@pytest.mark.parametrize("optimize", [False, True])
def test_a_variable_holding_zero_is_not_the_null_literal(optimize, tmp_path):
    """`-O` builds `z` as the constant it holds; the language still sees a variable."""
    src = tmp_path / "k.mettle"
    src.write_text(_INT_AS_POINTER)
    with pytest.raises(CompileError) as e:
        compile_file(str(src), Options(emit="ptx", gpu_arch="sm_90a", optimize=optimize))
    assert [d.code for d in e.value.diagnostics] == ["E0203"]


_HOST_FUNCTIONS = """
fn mix(a: int32, b: int32) -> int32 {
  var s: int32 = 0;
  var k: int32 = a & 7;                       // declared once, read in every loop below
  for (var i: int32 = 0; i < k + 3; i += 1) {
    var t: int32 = i * b + k;                 // declared once per iteration
    if (t % 3 == 0) { continue; }
    if (s > 1000) { break; }
    var u: int32 = t ^ a;
    s = s + u;
    for j in 0..i {
      var w: int32 = j + t;
      if (w > 9 && (s & 1) == 0) { s = s - w; } else { s += 1; }
    }
  }
  switch (k) {
    case 1: { s += 7; }
    case 2: { var z: int32 = s * 2; s = z; break; }
    default: { s -= 1; }
  }
  var e: int32 = s;
  while (e > 50) { e = e / 2; }
  if (a < 0) { return e + k; }
  return e - s + k;
}

fn shadow(a: int32) -> int32 {
  var x: int32 = a + 1;
  var r: int32 = 0;
  for i in 0..4 {
    var x: int32 = i * 10 + a;                // shadows the outer x, per iteration
    r = r + x;
  }
  return r + x;
}
"""


@pytest.mark.parametrize("name", ["mix", "shadow"])
def test_frontend_ssa_computes_what_slots_compute(name, tmp_path):
    """The same source lowered both ways, run by the IR interpreter on many inputs:
    write-once variables (declared in and out of loops, shadowed), loop-carried ones,
    break, continue, switch fallthrough and short-circuit conditions."""
    from tests.opt.interp import run
    src = tmp_path / "f.mettle"
    src.write_text(_HOST_FUNCTIONS)
    slots, _ = compile_to_ir(str(src), gpu=False)
    ssa, _ = compile_to_ir(str(src), gpu=False, ssa=True)
    fn = ssa.functions[name]
    verify_function(fn, ssa=True)
    assert _slot_ops(fn) == []
    args = [(a, b) for a in (-9, -1, 0, 1, 2, 5, 7, 13, 100) for b in (-4, 0, 3, 11)]
    for a, b in args:
        inputs = [a, b][:len(fn.params)]
        assert run(fn, inputs)[0] == run(slots.functions[name], inputs)[0], (a, b)
