"""reread (opt/reread.py, called by load-ahead): global loads of loops that read a base
another loop also reads carry `reread=true`, which PTX prints as `.L1::evict_last`."""
from __future__ import annotations

import os

import pytest

from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt import reread
from toolchain.compiler.opt.analyses import Analyses, TargetInfo

PTX = TargetInfo(32, "ptx", True)

# two passes over %x (and %g in the first only); %s is shared memory; %q is a pointer IV
TWO_LOOPS = """\
function @f(%x: ptr<f32, global>, %g: ptr<f32, global>, %s: ptr<f32, workgroup>, %n: i32) -> void {
entry:
  br a.cond
a.cond:
  %i = phi i32 [0:i32, entry], [%i1, a.body]
  %acc = phi f32 [0.0:f32, entry], [%acc2, a.body]
  %c = cmp bool %i, %n {pred=lt}
  cbr %c, a.body, b.pre
a.body:
  %w = convert i64 %i
  %px = ptradd ptr<f32, global> %x, %w
  %v = load f32 %px
  %pg = ptradd ptr<f32, global> %g, %w
  %u = load f32 %pg
  %ps = ptradd ptr<f32, workgroup> %s, %w
  %t = load f32 %ps
  %acc1 = add f32 %acc, %v
  %acc3 = add f32 %acc1, %u
  %acc2 = add f32 %acc3, %t
  %i1 = add i32 %i, 1:i32
  br a.cond
b.pre:
  br b.cond
b.cond:
  %j = phi i32 [0:i32, b.pre], [%j1, b.body]
  %q = phi ptr<f32, global> [%x, b.pre], [%q1, b.body]
  %d = cmp bool %j, %n {pred=lt}
  cbr %d, b.body, b.end
b.body:
  %w2 = convert i64 %j
  %px2 = ptradd ptr<f32, global> %x, %w2
  %v2 = load f32 %px2
  %ps2 = ptradd ptr<f32, workgroup> %s, %w2
  %t2 = load f32 %ps2
  %viv = load f32 %q
  %sum = add f32 %v2, %t2
  %sum2 = add f32 %sum, %viv
  %sum3 = add f32 %sum2, %acc
  store %px2, %sum3
  %q1 = ptradd ptr<f32, global> %q, 1:i64
  %j1 = add i32 %j, 1:i32
  br b.cond
b.end:
  ret
}
"""


def _marked(src: str) -> tuple[int, list[bool]]:
    reread.STREAM, saved = False, reread.STREAM      # the policy: tests/opt/test_load_ahead.py
    try:
        return _mark_all(src)
    finally:
        reread.STREAM = saved


def _mark_all(src: str) -> tuple[int, list[bool]]:
    m = parse_module(src)
    fn = m.functions["f"]
    n = reread.mark(fn, Analyses(fn, m, gpu=True, target=PTX))
    return n, [bool(i.attrs.get("reread")) for b in fn.blocks for i in b.instrs
               if i.op == "load"]


def test_loads_of_a_base_two_loops_read_are_marked():
    n, flags = _marked(TWO_LOOPS)
    # a.body: x (also read by b), g (only here), s (workgroup); b.body: x, s, the IV q
    assert flags == [True, False, False, True, False, False]
    assert n == 2


def test_one_loop_marks_nothing():
    one = TWO_LOOPS.replace("  %v2 = load f32 %px2\n", "  %v2 = add f32 0.0:f32, 1.0:f32\n")
    n, flags = _marked(one)
    assert n == 0 and not any(flags)


def test_ptx_prints_the_hint_on_the_row_passes(tmp_path, ptxas, monkeypatch):
    """bench/kernels/plain.mettle under -O: softmax's three passes over the row read x with
    the hint, layer norm's two as well (gamma/beta, read in one loop, are not); without
    -O nothing is marked."""
    from toolchain.compiler.driver import Options, compile_file
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.join(root, "bench", "kernels", "plain.mettle")
    monkeypatch.setattr(reread, "STREAM", False)
    out = compile_file(src, Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                    explain=True))
    ptx = out.data.decode()
    ptxas(ptx, "sm_90a")

    def body(name):
        a = ptx.index(f".entry {name}(")
        return ptx[a:ptx.index("\n}\n", a)]
    soft, ln = body("softmax_plain"), body("layernorm_plain")
    assert "ld.global.f32" not in soft and soft.count("ld.global.L1::evict_last.f32") >= 3
    assert ln.count("ld.global.f32") > 0 and ln.count("ld.global.L1::evict_last.f32") >= 2
    assert "evict" not in body("vadd_gs") and "evict" not in body("gemm_kloop")
    for line in (38, 43, 47):
        assert f"softmax_plain: line {line}: load-ahead: 1 load(s) marked reread: another " \
               "loop reads the same base (kept in L1 on PTX)" in out.explain.splitlines()
    plain = compile_file(src, Options(emit="ptx", gpu_arch="sm_90a")).data.decode()
    assert "evict" not in plain


@pytest.mark.parametrize("arch", ["sm_75", "sm_80"])
def test_hint_assembles_on_older_targets(tmp_path, ptxas, arch):
    from toolchain.compiler.driver import Options, compile_file
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.join(root, "bench", "kernels", "plain.mettle")
    ptx = compile_file(src, Options(emit="ptx", gpu_arch=arch, optimize=True)).data.decode()
    assert "ld.global.L1::evict_last.f32" in ptx
    ptxas(ptx, arch)


def test_a_target_without_the_priority_gets_no_reread_mark():
    """The access policy asks the target (`has("L1::evict_last")`): PTX ISA 6.4 has no
    cache priority, so nothing is marked reread (the last-read marks stay: `.cs` exists)."""
    m = parse_module(TWO_LOOPS)
    fn = m.functions["f"]
    old = TargetInfo(32, "ptx", True, features=("cp.async",))
    saved, reread.STREAM = reread.STREAM, False
    try:
        n = reread.mark(fn, Analyses(fn, m, gpu=True, target=old))
    finally:
        reread.STREAM = saved
    assert n == 0
    assert not any(i.attrs.get("reread") for b in fn.blocks for i in b.instrs)


def test_portable_profile_assembles_the_row_kernels(ptxas):
    """-O on the portable profile (PTX 6.4): the row passes load plainly, and ptxas takes
    the module (it refuses `.L1::evict_last` before PTX 7.4)."""
    from toolchain.compiler.driver import Options, compile_file
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.join(root, "bench", "kernels", "plain.mettle")
    out = compile_file(src, Options(emit="ptx", gpu_arch="portable", optimize=True,
                                    explain=True))
    ptx = out.data.decode()
    assert "evict_last" not in ptx and ".version 6.4" in ptx
    assert "marked reread" not in out.explain
    ptxas(ptx, "sm_75")


def test_backend_drops_a_priority_its_profile_lacks():
    """A `reread` load reaching a PTX 6.4 profile (IR built by hand) prints plain."""
    from toolchain.compiler.targets.ptx import emit_ptx, resolve_profile
    m = parse_module("kernel @f(%x: ptr<f32, global>, %y: ptr<f32, global>) -> void export {\n"
                     "entry:\n  %v = load f32 %x\n  store %y, %v\n  ret\n}\n")
    for b in m.functions["f"].blocks:
        for i in b.instrs:
            if i.op == "load":
                i.attrs["reread"] = True
    assert "evict_last" not in emit_ptx(m, resolve_profile("portable", None))
    assert "ld.global.L1::evict_last.f32" in emit_ptx(m, resolve_profile("sm_80", None))
