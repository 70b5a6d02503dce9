"""Lower whole programs, verify the IR, and check golden snippets of the printed IR."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import device_program, format_module, verify_module

DATA = Path(__file__).resolve().parents[1] / "data"
KERNELS = ["vadd", "saxpy_helper", "index3d", "math"]


def lower(path=None, src=None, gpu=True):
    m, warnings = compile_to_ir(str(path or "t.mettle"), gpu=gpu, source_text=src)
    verify_module(m)
    return format_module(m), m, warnings


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_files_lower_and_verify(name):
    text, m, warnings = lower(DATA / "kernels" / f"{name}.mettle")
    assert warnings == []
    prog = device_program(m)
    assert [k.name for k in prog.kernels] == [name if name != "saxpy_helper" else "saxpy"]


def test_vadd_golden():
    text, _, _ = lower(DATA / "kernels" / "vadd.mettle")
    assert ("kernel @vadd(%a: ptr<f32, global>, %b: ptr<f32, global>, "
            "%c: ptr<f32, global>, %n: i32) -> void export {") in text
    assert "\n".join([
        "  %0 = gpu.index u32 {axis=x, kind=block}",
        "  %1 = gpu.index u32 {axis=x, kind=block_dim}",
        "  %2 = mul u32 %0, %1",
        "  %3 = gpu.index u32 {axis=x, kind=thread}",
        "  %4 = add u32 %2, %3",
        "  %5 = convert i32 %4",
        "  local.set $i, %5"]) in text
    assert "cmp bool %6, %n {pred=lt}" in text


def test_saxpy_helper_is_a_device_function():
    text, m, _ = lower(DATA / "kernels" / "saxpy_helper.mettle")
    assert "function @axpy(%a: f32, %x: f32, %y: f32) -> f32 {" in text
    assert "call f32 @axpy, %a, %14, %18" in text
    assert [f.name for f in device_program(m).helpers] == ["axpy"]


def test_math_uses_intrinsics_not_calls():
    text, _, _ = lower(DATA / "kernels" / "math.mettle")
    for op in ("math.sqrt", "math.exp", "math.sin", "math.cos", "math.log", "math.fabs"):
        assert f"= {op} f32" in text
    assert "call" not in text.split("kernel @math")[1]


def test_index3d_reads_all_axes():
    text, _, _ = lower(DATA / "kernels" / "index3d.mettle")
    for kind in ("thread", "block", "block_dim"):
        for ax in "xyz":
            assert f"gpu.index u32 {{axis={ax}, kind={kind}}}" in text


def test_host_program_lowers_and_verifies():
    text, m, warnings = lower(DATA / "frontend_sema" / "host_program.mettle", gpu=False)
    assert warnings == []
    assert "struct %Node { value: i64, next: ptr<%Node> }" in text
    assert "global @table: [3 x i32] = {0: i32 1, 4: i32 2, 8: i32 3}" in text
    assert "%2 = call i64 @fact, %1" in text          # recursion
    assert m.functions["main"].linkage == "export"


def test_int_to_float_converts_and_literals_adapt():
    src = ("fn f(i: int32) -> float32 {\n  var u: uint8 = 300;\n  var g: float32 = i;\n"
           "  return g + (float32)u;\n}\nfn main() -> int32 { return 0; }")
    text, _, _ = lower(src=src, gpu=False)
    assert "local.set $u, 44:u8" in text
    assert "convert f32 %i" in text


def test_shift_and_pointer_difference():
    src = ("fn f(a: int32, b: uint32, p: int32*, q: int32*) -> int64 {\n"
           "  var x: int32 = a >> 1;\n  var y: uint32 = b >> 1;\n  return q - p;\n}\n"
           "fn main() -> int32 { return 0; }")
    text, _, _ = lower(src=src, gpu=False)
    assert "shr i32 %a, 1:i32" in text and "shr u32 %b, 1:u32" in text
    assert "ptrtoint i64 %q" in text and "ptrtoint i64 %p" in text


def test_compound_index_assignment_evaluates_index_twice():
    src = ("var n: int32 = 0;\nfn f() -> int32 { n += 1; return n; }\n"
           "fn main() -> int32 {\n  var a: int32[4];\n  a[f()] += 1;\n  return a[0];\n}")
    text, _, _ = lower(src=src, gpu=False)
    main = text.split("function @main")[1]
    assert main.count("call i32 @f") == 2


def test_workgroup_atomics_and_barrier():
    src = ("kernel k(out: uint32*) {\n  workgroup var t: uint32[64];\n"
           "  var i: int32 = thread.x;\n  t[i] = 0;\n  barrier(workgroup, acq_rel);\n"
           "  var o: uint32 = atomic_fetch_add(t, 0, 1);\n"
           "  atomic_store(out, i, o, order: release);\n}")
    text, _, _ = lower(src=src)
    assert "gpu.alloc ptr<u32, workgroup> {count=64, elem=u32, name=t, space=workgroup}" \
        in text
    assert "gpu.barrier {order=acq_rel, regions=(workgroup)}" in text
    assert "{op=add, order=seq_cst, scope=workgroup, space=workgroup}" in text
    assert "{order=release, scope=device, space=global}" in text


def test_helper_taking_workgroup_pointer_becomes_generic():
    src = ("fn put(p: float32*, i: int32) { p[i] = 1.0; }\n"
           "kernel k(out: float32*) {\n  workgroup var t: float32[32];\n"
           "  put(t, thread.x);\n  put(out, 0);\n}")
    text, _, _ = lower(src=src)
    assert "function @put(%p: ptr<f32>, %i: i32) -> void" in text
    assert "addrspacecast ptr<f32> " in text


def test_typed_dispatch_lowers_to_launch():
    src = ("extern kernel(block = 256) vadd(a: float32*, n: int32);\n"
           "fn main() -> int32 {\n  var d: int64 = 0;\n  dispatch vadd[work: 1000](d, 1000);\n"
           "  dispatch vadd[4, 256](d, 7) on 0;\n  return 0;\n}")
    text, m, _ = lower(src=src, gpu=False)
    assert "kernel_decl @vadd(ptr<f32, global>, i32) block(256, 1, 1)" in text
    launches = [i for f in m.functions.values() for i in f.instructions()
                if i.op == "gpu.launch"]
    assert [l.attrs for l in launches] == [{"kernel": "vadd", "nargs": 2}] * 2
