"""IR layer: builder type checks, printer stability, and the shared device verifiers."""
import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.ir import (Builder, F32, I32, I64, IRTypeError, Module, U32, VOID,
                                   device_program, format_module, ptr, verify_module)
from tests.ir.ir_helpers import if_then, kernel


def codes(excinfo):
    return [d.code for d in excinfo.value.diagnostics]


def test_builder_rejects_mismatched_operands():
    m, b, fn = kernel()
    with pytest.raises(IRTypeError):
        b.add(b.const(I32, 1), b.const(F32, 1.0))
    with pytest.raises(IRTypeError):
        b.store(fn.params[0], b.const(I32, 1))
    with pytest.raises(IRTypeError):
        b.ptradd(fn.params[0], b.const(I32, 1))     # index must be i64


def test_printer_is_stable_and_verifier_accepts():
    m, b, fn = kernel()
    tid = b.gpu_index("thread", "x")
    b.store(b.ptradd(fn.params[0], b.convert(tid, I64)), tid)
    b.ret()
    verify_module(m)
    text = format_module(m)
    assert text == format_module(m)
    assert "%0 = gpu.index u32 {axis=x, kind=thread}" in text
    assert "store %2, %0" in text


def test_unterminated_block_is_invalid_ir():
    m, b, fn = kernel()
    b.gpu_index("thread", "x")
    with pytest.raises(CompileError) as e:
        verify_module(m)
    assert codes(e) == ["E0400"]


def test_gpu_module_needs_a_kernel():
    m = Module("host")
    b = Builder(m)
    f = b.function("main", [], I32)
    b.position_at_end(b.append_block(f, "entry"))
    b.ret(b.const(I32, 0))
    with pytest.raises(CompileError) as e:
        device_program(m)
    assert codes(e) == ["E0401"]


def _call_graph_module():
    m, b, k = kernel()
    ext = b.extern_function("puts", [("s", ptr(U32))], I32)
    rec = b.function("rec", [("x", I32)], I32)
    host_only = b.function("unused_host", [], I32)
    b.position_at_end(b.append_block(host_only, "entry"))
    b.call(ext, [b.const(ptr(U32), 0)])
    b.ret(b.const(I32, 0))
    b.position_at_end(b.append_block(rec, "entry"))
    b.ret(b.call(rec, [rec.params[0]]))
    b.position_at_end(k.blocks[0])
    b.call(rec, [b.const(I32, 1)])
    b.call(ext, [b.const(ptr(U32), 0)])
    b.launch(b.const(I64, 0), [b.const(I32, 1)] * 3, [b.const(I32, 1)] * 3,
             b.const(I32, 0), b.const(I64, 0), [])
    b.ret()
    return m


def test_call_graph_rejections_are_shared_and_located():
    with pytest.raises(CompileError) as e:
        device_program(_call_graph_module())
    assert sorted(codes(e)) == ["E0402", "E0404", "E0406"]


def test_unreachable_host_functions_are_not_device_code():
    m, b, k = kernel()
    helper = b.function("twice", [("x", I32)], I32)
    host = b.function("host_main", [], I32)
    b.ret()
    for f in (helper, host):
        b.position_at_end(b.append_block(f, "entry"))
        b.ret(b.const(I32, 0))
    b.position_at_end(k.blocks[0])
    prog = device_program(m)
    assert [f.name for f in prog.functions] == ["k"]


def _barrier_under(cond_fn):
    m, b, k = kernel()
    if_then(b, k, cond_fn(b, k), lambda b: b.barrier())
    b.ret()
    return m


def test_barrier_under_varying_branch_is_rejected():
    m = _barrier_under(lambda b, k: b.cmp("lt", b.gpu_index("thread", "x"), b.const(U32, 5)))
    with pytest.raises(CompileError) as e:
        device_program(m)
    assert codes(e) == ["E0410"]


def test_barrier_under_uniform_branch_is_accepted():
    m = _barrier_under(lambda b, k: b.cmp("lt", k.params[1], b.const(I32, 5)))
    device_program(m)


def test_warp_index_is_subgroup_uniform_but_not_workgroup_uniform():
    def warp_cond(b, k):
        warp = b.div(b.gpu_index("thread", "x"), b.const(U32, 32))
        return b.cmp("eq", warp, b.const(U32, 0))
    m, b, k = kernel()
    if_then(b, k, warp_cond(b, k),
            lambda b: b.subgroup("reduce", U32, [b.const(U32, 1)], {"op": "add"}))
    b.ret()
    device_program(m)                      # subgroup collective: fine
    with pytest.raises(CompileError) as e:
        device_program(_barrier_under(warp_cond))
    assert codes(e) == ["E0410"]


def test_varying_trip_loop_makes_body_divergent():
    m, b, k = kernel()
    i = b.local(k, U32, "i")
    b.local_set(i, b.const(U32, 0))
    head, body, done = (b.append_block(k, n) for n in ("head", "body", "done"))
    b.br(head)
    b.position_at_end(head)
    b.cbr(b.cmp("lt", b.local_get(i), b.gpu_index("thread", "x")), body, done)
    b.position_at_end(body)
    b.subgroup("reduce", U32, [b.const(U32, 1)], {"op": "add"})
    b.local_set(i, b.add(b.local_get(i), b.const(U32, 1)))
    b.br(head)
    b.position_at_end(done)
    b.ret()
    with pytest.raises(CompileError) as e:
        device_program(m)
    assert codes(e) == ["E0411"]


def test_varying_broadcast_lane_and_helper_param_join():
    m, b, k = kernel()
    helper = b.function("bcast", [("lane", U32)], U32)
    b.position_at_end(b.append_block(helper, "entry"))
    b.ret(b.subgroup("broadcast", U32, [b.const(U32, 7), helper.params[0]]))
    b.position_at_end(k.blocks[0])
    b.call(helper, [b.const(U32, 0)])
    device_program(m)                       # every call site passes a uniform lane
    b.call(helper, [b.gpu_index("thread", "x")])
    b.ret()
    with pytest.raises(CompileError) as e:
        device_program(m)
    assert codes(e) == ["E0412"]


def _async_kernel(ops):
    m, b, k = kernel(params=(("src", ptr(U32, "global")), ("n", I32)))
    tile = b.gpu_alloc("workgroup", U32, 128)
    for op in ops:
        if op == "copy":
            b.async_copy(tile, k.params[0], b.const(I32, 4), transaction=16)
        elif op == "commit":
            b.async_commit()
        else:
            b.async_wait(int(op[4:]))
    b.ret()
    return m


def test_async_groups_balanced_and_unbalanced():
    device_program(_async_kernel(["copy", "commit", "wait0"]))
    for ops in (["copy"], ["copy", "commit"], ["copy", "commit", "wait1"]):
        with pytest.raises(CompileError) as e:
            device_program(_async_kernel(ops))
        assert codes(e) == ["E0420"], ops
    with pytest.raises(CompileError) as e:
        device_program(_async_kernel(["copy", "commit"] * 8 + ["wait0"]))
    assert "E0421" in codes(e)


def test_async_groups_must_agree_across_paths():
    m, b, k = kernel(params=(("src", ptr(U32, "global")), ("n", I32)))
    tile = b.gpu_alloc("workgroup", U32, 128)
    if_then(b, k, b.cmp("lt", k.params[1], b.const(I32, 3)),
            lambda b: (b.async_copy(tile, k.params[0], b.const(I32, 4), transaction=16),
                       b.async_commit()))
    b.async_wait(0)
    b.ret()
    with pytest.raises(CompileError) as e:
        device_program(m)
    assert codes(e) == ["E0422"]
