"""What the OpenCL 2.0 profile cannot express is a located CompileError (E051x), never a
silent narrowing or a traceback; backend bugs surface as E0900."""
from __future__ import annotations

import pytest

from tests.spirv_emit.irkernels import _kernel, at, global_id
from tests.support.spirv import validate
from toolchain.compiler.diagnostics import CompileError, Span
from toolchain.compiler.ir import (BOOL, F32, I32, U8, U16, U32, VOID, Builder, Instr, Module,
                                   ptr)
from toolchain.compiler.targets.spirv import emit_spirv
from toolchain.compiler.targets.spirv import emit_function
from toolchain.compiler.targets.spirv.encoder import SpirvBuildError

SPAN = Span("k.mettle", 7, 3, 5)


def _module(body):
    b = Builder(Module("m"))
    fn = _kernel(b, "k", [("x", ptr(U32, "global")), ("lane", U32)])
    body(b, fn)
    b.ret()
    return b.module


def _code(module) -> tuple[str, str, Span | None]:
    with pytest.raises(CompileError) as info:
        emit_spirv(module)
    (d,) = info.value.diagnostics
    return d.code, d.message, d.span


def test_varying_shuffle_is_a_capability_error_at_its_span():
    def body(b, fn):
        x, lane = fn.params
        v = b.load(at(b, x, global_id(b)))
        b.store(x, b.subgroup("shuffle", U32, [v, lane], span=SPAN))
    code, msg, span = _code(_module(body))
    assert code == "E0511" and span == SPAN
    assert "the OpenCL 2.0 profile cannot represent a varying-source shuffle" in msg


def test_constant_lane_shuffle_is_accepted():
    def body(b, fn):
        x, _ = fn.params
        b.store(x, b.subgroup("shuffle", U32, [b.load(x), b.const(U32, 3)], span=SPAN))
    spv = emit_spirv(_module(body))
    validate(spv)
    assert spv[:4] == b"\x03\x02\x23\x07"


def test_debug_print_is_ptx_only():
    def body(b, fn):
        fmt = b.string_literal(b"hello %d\n")
        b.intrinsic("debug.print", VOID, [fmt, b.const(I32, 1)], span=SPAN)
    code, msg, span = _code(_module(body))
    assert code == "E0512" and span == SPAN and "PTX only" in msg


@pytest.mark.parametrize("checks", [False, True])
def test_gpu_assert_is_rejected_with_or_without_checks(checks):
    def body(b, fn):
        b.intrinsic("debug.assert", VOID, [b.const(I32, 1)], span=SPAN)
    with pytest.raises(CompileError) as info:
        emit_spirv(_module(body), gpu_checks=checks)
    (d,) = info.value.diagnostics
    assert d.code == "E0513" and d.span == SPAN
    assert "SPIR-V rejects gpu_assert" in d.message


def _tensor_module(which: str):
    from toolchain.compiler.ir.tensor import EpilogueDesc, TensorDesc
    b = Builder(Module("t"))
    fn = _kernel(b, "t", [("a", ptr(U16, "global")), ("c", ptr(F32, "global"))])
    a, c = fn.params
    if which == "mma":
        desc = TensorDesc(16, 16, 16, "f16", "f16", "f32", "f32")
        b.tensor_mma(desc, a, a, c, c, span=SPAN)
    elif which == "matmul":
        desc = TensorDesc(16, 16, 16, "f16", "f16", "f32", "f32", lda=16, ldb=16, ldc=16,
                          ldd=16)
        z = b.const(U32, 0)
        b.tensor_matmul(desc, a, a, c, c, [z, z, b.const(U32, 16), b.const(U32, 16),
                                           b.const(U32, 16)], span=SPAN)
    else:
        b.tensor_epilogue(EpilogueDesc(16, 16, "f32"), c, span=SPAN)
    b.ret()
    return b.module


@pytest.mark.parametrize("which", ["mma", "matmul", "epilogue"])
def test_tensor_operations_are_capability_errors(which):
    code, msg, span = _code(_tensor_module(which))
    assert code == "E0510" and span == SPAN and f"tensor_{which}" in msg


def test_unknown_ops_are_capability_errors_not_keyerrors():
    """An op outside the IR table (a foreign frontend bypassing the builder) is E0510 at
    the op, before the shared verifiers index the table."""
    def body(b, fn):
        b.block.instrs.append(Instr("tensor.transfer", VOID, [], {}, [], SPAN, b.block))
    code, msg, span = _code(_module(body))
    assert code == "E0510" and span == SPAN and "tensor.transfer" in msg


def test_vector_load_of_bytes_is_an_operand_error():
    def body(b, fn):
        tmp = b.gpu_alloc("private", U8, 4)
        b.intrinsic("vec.load4", VOID, [tmp, tmp], span=SPAN)
    code, msg, span = _code(_module(body))
    assert code == "E0514" and span == SPAN and "32-bit" in msg


def test_writer_error_becomes_internal_error_not_traceback(monkeypatch):
    def broken(em, ins):
        raise SpirvBuildError("simulated writer misuse")
    monkeypatch.setitem(emit_function.LOWER, "add", broken)

    def body(b, fn):
        x, lane = fn.params
        b.store(x, b.add(lane, lane))
    code, msg, _ = _code(_module(body))
    assert code == "E0900" and "simulated writer misuse" in msg


def test_shared_verifier_errors_pass_through():
    b = Builder(Module("nokernel"))
    fn = b.function("f", [], VOID)
    b.position_at_end(b.append_block(fn, "entry"))
    b.ret()
    code, _, _ = _code(b.module)
    assert code == "E0401"


def test_bool_and_float_helpers_are_fine():
    """Counter-check for the diagnostics above: a helper with bool/f32 params emits."""
    b = Builder(Module("ok"))
    h = b.function("pick", [("c", BOOL), ("a", F32)], F32)
    b.position_at_end(b.append_block(h, "entry"))
    b.ret(b.select(h.params[0], h.params[1], b.const(F32, 0.0)))
    fn = _kernel(b, "k", [("x", ptr(F32, "global"))])
    x = fn.params[0]
    b.store(x, b.call(h, [b.cmp("gt", b.load(x), b.const(F32, 1.0)), b.load(x)]))
    b.ret()
    validate(emit_spirv(b.module))
