"""load-combine: scalar loads/stores of one base at adjacent, provably aligned offsets
become one vector access. Property: random kernels over workgroup/private arrays give the
same memory and result before and after the pass (the interpreter traps on a misaligned
vector access), and the combined code assembles (ptxas) and validates (spirv-val)."""
from __future__ import annotations

import random

import pytest

from tests.opt.gpu_kernels import LOAD_COMBINE as SOURCE
from tests.opt.interp import Machine, Trap
from tests.support import spirv
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.ir import verify_function
from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt.analyses import Analyses
from toolchain.compiler.opt.manager import PASSES, flat_pipeline
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

INPUTS = ((0, 0, 0.0), (5, -3, 1.5), (7, 2, -2.75), (3, 100, 1e20), (-1, 9, 0.25))


class _Prog:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.lines: list[str] = []
        self.n = 0

    def val(self, text: str) -> str:
        self.lines.append(f"  %{self.n} = {text}")
        self.n += 1
        return f"%{self.n - 1}"

    def do(self, text: str) -> None:
        self.lines.append(f"  {text}")

    def at(self, arr: str, elem: str, space: str, index: str, k: int) -> str:
        """&arr[index + k] the way the frontend writes it (a widened i32 sum)."""
        s = self.val(f"add i32 {index}, {k}:i32") if k else index
        w = self.val(f"convert i64 {s}")
        return self.val(f"ptradd ptr<{elem}, {space}> {arr}, {w}")


def program(seed: int) -> str:
    g = _Prog(seed)
    r = g.r
    space = r.choice(("workgroup", "private"))
    t = g.val(f"gpu.alloc ptr<f32, {space}> {{count=64, elem=f32, name=t, space={space}}}")
    u = g.val(f"gpu.alloc ptr<i64, {space}> {{count=32, elem=i64, name=u, space={space}}}")
    i = g.val("and i32 %a, 7:i32")
    j4 = g.val(f"mul i32 {i}, {r.choice((4, 8))}:i32")      # a multiple of 4 (or 8)
    j2 = g.val(f"mul i32 {i}, 2:i32")
    odd = g.val("and i32 %b, 31:i32")                     # nothing known
    for k in range(64):
        g.do(f"store {g.at(t, 'f32', space, '0:i32', k)}, {g.val(f'add f32 %x, {k}.5:f32')}")
    for k in range(32):
        g.do(f"store {g.at(u, 'i64', space, '0:i32', k)}, {k * 7919 - 3}:i64")
    acc_f, acc_i = "0.0:f32", "0:i64"
    for _ in range(r.randint(6, 16)):
        c = r.random()
        if c < 0.45:                                       # a run of adjacent loads
            base = r.choice((j4, j4, odd))
            for k in r.sample(range(4), r.choice((2, 4))):
                v = g.val(f"load f32 {g.at(t, 'f32', space, base, k)}")
                acc_f = g.val(f"add f32 {acc_f}, {v}")
        elif c < 0.65:
            for k in r.sample(range(2), 2):
                v = g.val(f"load i64 {g.at(u, 'i64', space, r.choice((j2, odd)), k)}")
                acc_i = g.val(f"add i64 {acc_i}, {v}")
        elif c < 0.8:                                      # a store that may alias a run
            base = r.choice((j4, odd))
            g.do(f"store {g.at(t, 'f32', space, base, r.randint(0, 3))}, {acc_f}")
        elif c < 0.9:                                      # stores that may combine
            for k in r.sample(range(4), 4):
                v = g.val(f"mul f32 {acc_f}, {k}.0:f32")
                g.do(f"store {g.at(t, 'f32', space, j4, k)}, {v}")
        else:
            g.do(f"store {g.at(u, 'i64', space, j2, r.randint(0, 1))}, {acc_i}")
    out = g.val("ptradd ptr<i64> %p, 1:i64")
    bits = g.val(f"bitcast i32 {acc_f}")
    g.do(f"store {out}, {g.val(f'convert i64 {bits}')}")
    for k in range(4):                                     # the arrays' final contents
        v = g.val(f"load i64 {g.at(u, 'i64', space, '0:i32', 8 * k)}")
        g.do(f"store {g.val(f'ptradd ptr<i64> %p, {2 + k}:i64')}, {v}")
        w = g.val(f"load f32 {g.at(t, 'f32', space, '0:i32', 16 * k + 1)}")
        wb = g.val(f"bitcast i32 {w}")
        g.do(f"store {g.val(f'ptradd ptr<i64> %p, {6 + k}:i64')}, {g.val(f'convert i64 {wb}')}")
    g.do(f"ret {acc_i}")
    head = ("; module lc\nkernel @k(%a: i32, %b: i32, %x: f32, %p: ptr<i64>) -> i64 export {\n"
            "entry:\n")
    return head + "\n".join(g.lines) + "\n}\n"


def run(fn, inputs):
    m = Machine(fuel=100_000)
    p = m.alloc(16 * 8, 16)
    try:
        return m.call(fn, [*inputs, p]), bytes(m.mem[p:p + 16 * 8])
    except Trap as e:
        return ("trap", str(e))


def _optimize(text: str, names) -> tuple:
    m = parse_module(text)
    fn = m.functions["k"]
    an = Analyses(fn, m, gpu=True)
    for name in names:
        p = PASSES[name]
        if p.run(fn, an):
            an.after_pass(p.invalidates)
        verify_function(fn, ssa=name != "out-of-ssa")
    return fn, m


def test_combining_preserves_results():
    combined = 0
    for seed in range(40):
        text = program(seed)
        want = [run(parse_module(text).functions["k"], i) for i in INPUTS]
        assert all(w[0] != "trap" for w in want), seed
        fn, m = _optimize(text, ["load-combine"])
        combined += sum(1 for ins in fn.instructions() if ins.type.is_vector)
        for inp, w in zip(INPUTS, want):
            assert run(fn, inp) == w, f"seed {seed}: load-combine changed the result on {inp}"
    assert combined >= 40                  # the property is not vacuous


@pytest.mark.parametrize("seed", range(0, 40, 5))
def test_pipeline_with_combining_preserves_results(seed):
    text = program(seed)
    want = [run(parse_module(text).functions["k"], i) for i in INPUTS]
    fn, _ = _optimize(text, flat_pipeline())
    for inp, w in zip(INPUTS, want):
        assert run(fn, inp) == w, f"seed {seed}: -O changed the result on {inp}"


def test_refusals():
    """No vector access without proof: a parameter pointer is only naturally aligned, a
    run starting at an odd element is not 16-byte aligned, and a store that may write a
    later member's bytes keeps the loads apart."""
    text = """; module r
kernel @k(%x: ptr<f32, global>, %i: i32, %j: i64) -> f32 export {
entry:
  %0 = gpu.alloc ptr<f32, workgroup> {count=64, elem=f32, name=t, space=workgroup}
  %1 = load f32 %x
  %2 = ptradd ptr<f32, global> %x, 1:i64
  %3 = load f32 %2
  %4 = ptradd ptr<f32, workgroup> %0, 1:i64
  %5 = load f32 %4
  %6 = ptradd ptr<f32, workgroup> %0, 2:i64
  %7 = load f32 %6
  %8 = ptradd ptr<f32, workgroup> %0, 4:i64
  %9 = load f32 %8
  %10 = ptradd ptr<f32, workgroup> %0, %j
  store %10, 1.0:f32
  %11 = ptradd ptr<f32, workgroup> %0, 5:i64
  %12 = load f32 %11
  %13 = add f32 %1, %3
  %14 = add f32 %5, %7
  %15 = add f32 %9, %12
  %16 = add f32 %13, %14
  %17 = add f32 %16, %15
  ret %17
}
"""
    fn, m = _optimize(text, ["load-combine"])
    assert not any(ins.type.is_vector for ins in fn.instructions())
    fixed = text.replace("%10 = ptradd ptr<f32, workgroup> %0, %j",
                         "%10 = ptradd ptr<f32, workgroup> %0, 9:i64")
    fn, m = _optimize(fixed, ["load-combine"])
    vec = [ins for ins in fn.instructions() if ins.op == "load" and ins.type.is_vector]
    assert [str(v.type) for v in vec] == ["vec<2 x f32>"]    # t[4], t[5] past t[9]'s store
    assert "load-combine: 2 loads combined into one 8-byte vector load" in m.remarks.format()


def test_vector_accesses_reach_ptx_and_spirv(tmp_path, ptxas):
    path = tmp_path / "lc.mettle"
    path.write_text(SOURCE)
    ptx = compile_file(str(path), Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                          verify_each=True)).data.decode()
    for op in ("st.shared.v4.f32", "st.shared.v2.f64", "ld.shared.v4.f32",
               "ld.shared.v2.f64"):
        assert ptx.count(op) == 1, op
    ptxas(ptx, "sm_90a")
    plain = compile_file(str(path), Options(emit="ptx", gpu_arch="sm_90a")).data.decode()
    assert ".v4" not in plain and ".v2" not in plain
    spv = compile_file(str(path), Options(emit="spirv", optimize=True)).data
    spirv.validate(spv)


def test_host_targets_reject_vectors():
    """Only GPU code gets vectors; a hand-built host IR that uses one gets a diagnostic
    (E0009), not a crash, from both host selectors."""
    from toolchain.compiler.diagnostics import CompileError
    from toolchain.compiler.targets.arm64 import target as arm64
    from toolchain.compiler.targets.x86_64 import target as x86_64
    text = """; module v
function @f(%p: ptr<vec<4 x f32>>) -> f32 export {
entry:
  %0 = load vec<4 x f32> %p
  %1 = vec.extract f32 %0 {index=2}
  ret %1
}
"""
    for t in (x86_64, arm64):
        with pytest.raises(CompileError) as e:
            t.emit_object(parse_module(text))
        assert e.value.diagnostics[0].code == "E0009"
