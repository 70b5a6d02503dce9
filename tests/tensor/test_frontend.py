"""Frontend + IR: every option reaches the neutral descriptor; bad options, storage types
and non-uniform operands are located diagnostics (E0340-E0343, E0413/E0414)."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import device_program
from toolchain.compiler.ir.tensor import EpilogueDesc, TensorDesc

from .kernels import epilogue_source, matmul_source, mma_source


def lower(src: str):
    module, _ = compile_to_ir("k.mettle", gpu=True, source_text=src)
    device_program(module)                     # the shared verifiers (uniformity) too
    return module


def tensor_instrs(module):
    return [i for f in module.functions.values() for i in f.instructions()
            if i.op.startswith("tensor.")]


def diag(src: str):
    with pytest.raises(CompileError) as info:
        lower(src)
    return info.value.diagnostics[0]


def test_mma_descriptor_carries_every_option():
    src = mma_source("k", "f16", "f16", "f16", "f32", "m32n48k32",
                     layouts=("col", "row", "col", "row"), transpose=(True, False),
                     lds={"lda": 40, "ldb": 56, "ldc": 48, "ldd": 64})
    (ins,) = tensor_instrs(lower(src))
    d = ins.attrs["desc"]
    assert isinstance(d, TensorDesc) and ins.op == "tensor.mma"
    assert (d.m, d.n, d.k) == (32, 48, 32)
    assert (d.accumulator_type, d.result_type) == ("f16", "f32")
    assert (d.a_layout, d.transpose_a, d.stored_layout("a")) == ("col", True, "row")
    assert (d.lda, d.ldb, d.ldc, d.ldd) == (40, 56, 48, 64)
    assert ins.attrs["roles"] == ("a", "b", "c", "d")


def test_runtime_strides_become_operands_and_matmul_controls():
    (ins,) = tensor_instrs(lower(matmul_source("k", "bf16", "bf16", "f32", "f32",
                                               "m32n32k16")))
    assert ins.attrs["roles"] == ("a", "b", "c", "d", "row", "column", "m", "n", "k",
                                  "lda", "ldb", "ldc", "ldd")
    assert ins.attrs["desc"].lda is None and ins.op == "tensor.matmul"


def test_named_shape_form_and_scalar_options():
    src = ("kernel k(a: uint8*, m: uint8*, c: float32*, d: float32*) {\n"
           "  tensor_mma(a, a, c, d, m: 16, n: 8, k: 32, a_type: e4m3, b_type: e5m2,\n"
           "    output_type: f32, sparsity: dense, rounding: nearest_even,\n"
           "    a_scale_mode: block32, a_scale_type: ue8m0, a_scale: m,\n"
           "    b_scale_mode: block32, b_scale_type: ue8m0, b_scale: m,\n"
           "    ldsa: 1, b_scale_ld: 2, scope: workgroup);\n}\n")
    d = tensor_instrs(lower(src))[0].attrs["desc"]
    assert (d.m, d.n, d.k, d.a_scale_type, d.ldsa, d.ldsb, d.scope) == \
        (16, 8, 32, "ue8m0", 1, 2, "workgroup")


def test_epilogue_descriptor():
    src = epilogue_source("k", "bf16", "m16n32", layout="col", bias_mode="matrix",
                          bias_layout="row", activation="clamp", ld=20, ldbias=40,
                          runtime_ld=True)
    (ins,) = tensor_instrs(lower(src))
    d = ins.attrs["desc"]
    assert isinstance(d, EpilogueDesc) and (d.m, d.n, d.layout) == (16, 32, "col")
    assert set(ins.attrs["roles"]) == {"d", "bias", "alpha", "beta", "clamp_min",
                                       "clamp_max", "ldd", "ldbias"}


K = "kernel k(h: uint16*, f: float32*, u: uint8*, n: uint32) {\n"
MMA = "  tensor_mma(h, h, f, f, shape: m16n16k16, input_type: f16, output_type: f32"


@pytest.mark.parametrize("body,code,fragment", [
    (MMA + ", colour: red);", "E0340", "unknown option `colour:`"),
    (MMA + ", a_layout: diagonal);", "E0340", "`a_layout:` must be one of row, col"),
    (MMA + ", a_layout: row, a_layout: col);", "E0340", "given twice"),
    (MMA + ", lda: 0);", "E0340", "must be positive"),
    (MMA + ", transpose_a: 1);", "E0340", "true or false"),
    (MMA + ", a_type: bf16);", "E0340", "conflicts with `input_type:`"),
    ("  tensor_mma(h, h, f, f, shape: m16n16, input_type: f16, output_type: f32);",
     "E0340", "mMnNkK"),
    ("  tensor_mma(h, h, f, f, shape: m16n16k16, input_type: f16);", "E0340",
     "accumulator_type"),
    (MMA + ", sparsity: structured_2_to_4);", "E0340", "needs a `metadata:` pointer"),
    ("  tensor_mma(h, h, f, f, shape: m8n8k128, input_type: b1, output_type: i32);",
     "E0340", "b1 A/B need"),
    ("  tensor_mma(f, h, f, f, shape: m16n16k16, input_type: f16, output_type: f32);",
     "E0343", "operand A must be a uint16*"),
    ("  tensor_mma(u, u, f, f, shape: m16n16k16, input_type: i8, output_type: i32);",
     "E0343", "int8*"),
    ("  tensor_matmul(h, h, f, f, 0, 0, n, n, n, shape: m16n16k16, input_type: f16,\n"
     "    output_type: f32, lda: 16, ldb: 16, ldc: 16);", "E0341", "explicit `ldd:`"),
    ("  tensor_matmul(h, h, f, f, 0, 0, n, n, -1, shape: m16n16k16, input_type: f16,\n"
     "    output_type: f32, lda: 16, ldb: 16, ldc: 16, ldd: 16);", "E0341", "unsigned"),
    ("  tensor_epilogue(f, shape: m16n16, element_type: f32, activation: clamp);",
     "E0342", "clamp_min"),
    ("  tensor_epilogue(f, shape: m16n16, element_type: f16);", "E0343", "uint16*"),
    ("  tensor_epilogue(f, shape: m16n16, element_type: f32, bias_mode: row);", "E0342",
     "go together"),
    ("  tensor_epilogue(f, shape: m16n16, element_type: f32, bias_mode: row, bias: f,\n"
     "    ldbias: 16);", "E0342", "needs `bias_mode: matrix`, not row"),
    ("  tensor_epilogue(f, shape: m16n16, element_type: f32, bias_mode: column, bias: f,\n"
     "    bias_layout: col);", "E0342", "needs `bias_mode: matrix`, not column"),
    ("  if (thread.x < 7) {\n" + MMA + ");\n  }", "E0413", "varying control"),
    ("  var p: float32* = f + thread.x;\n"
     "  tensor_mma(h, h, p, p, shape: m16n16k16, input_type: f16, output_type: f32);",
     "E0414", "operand `c` is varying"),
    ("  if (thread.x < 64) {\n" + MMA + ", scope: workgroup);\n  }", "E0413",
     "workgroup scope"),
])
def test_located_diagnostics(body, code, fragment):
    d = diag(K + body + "\n}\n")
    assert d.code == code and fragment in d.message, (d.code, d.message)
    assert d.span is not None and d.span.line >= 2


def test_subgroup_uniform_warp_index_is_accepted_for_subgroup_scope():
    lower(matmul_source("k", "f16", "f16", "f32", "f32", "m16n16k16", warps=4))


def test_helper_functions_cannot_use_tensor_ops():
    d = diag("fn h(f: float32*) {\n  tensor_epilogue(f, shape: m16n16, element_type: f32);"
             "\n}\nkernel k(f: float32*) { h(f); }\n")
    assert d.code == "E0310"
