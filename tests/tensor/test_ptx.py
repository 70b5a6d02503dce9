"""PTX emission of the tensor operations: FileCheck of the selected instruction forms,
ptxas assembly of every module for sm_90a and sm_121a, and capability refusals that name
the PTX ISA and target they need. (The SPIR-V profile's refusals:
tests/spirv_emit/test_tensor_refusals.py.)"""
from __future__ import annotations

import pytest

from tests.support.filecheck import filecheck
from toolchain.compiler.diagnostics import CompileError

from .kernels import compile_ptx, epilogue_source, matmul_source, mma_source

ARCHS = ("sm_90a", "sm_121a")
LD = {"lda": 48, "ldb": 40, "ldc": 56, "ldd": 64}


def assemble_all(ptxas, src: str) -> dict[str, str]:
    out = {}
    for arch in ARCHS:
        out[arch] = compile_ptx(src, arch)
        ptxas(out[arch], arch)
    return out


WMMA_CASES = [
    ("f16", "f16", "f32", "m16n16k16", "m16n16k16", 1),
    ("f16", "f16", "f16", "m8n32k16", "m8n32k16", 1),
    ("f16", "f32", "f32", "m32n8k16", "m32n8k16", 1),
    ("f16", "f32", "f32", "m32n48k32", "m16n16k16", 12),
    ("bf16", "f32", "f32", "m16n16k16", "m16n16k16", 1),
    ("bf16", "f32", "f32", "m8n32k16", "m8n32k16", 1),
    ("bf16", "f32", "f32", "m64n32k16", "m16n16k16", 8),
    ("tf32", "f32", "f32", "m16n16k8", "m16n16k8", 1),
    ("tf32", "f32", "f32", "m32n32k16", "m16n16k8", 8),
    ("f64", "f64", "f64", "m8n8k4", "m8n8k4", 1),
    ("f64", "f64", "f64", "m16n24k8", "m8n8k4", 12),
    ("i8", "i32", "i32", "m16n16k16", "m16n16k16", 1),
    ("u8", "i32", "i32", "m32n8k16", "m32n8k16", 1),
    ("u8", "i32", "i32", "m32n32k32", "m16n16k16", 8),
]


@pytest.mark.parametrize("runtime", [False, True])
@pytest.mark.parametrize("fmt,acc,res,shape,phys,mmas", WMMA_CASES)
def test_wmma_families_grids_and_strides(ptxas, fmt, acc, res, shape, phys, mmas, runtime):
    src = mma_source("k", fmt, fmt, acc, res, shape, layouts=("col", "row", "row", "col"),
                     transpose=(True, True), lds=LD, runtime_ld=runtime)
    text = assemble_all(ptxas, src)["sm_90a"]
    stride = "%r{{[0-9]+}}" if runtime else "48"
    # transpose of a stored column-major A is a row-major logical A (and B: row -> col)
    filecheck(text, f"CHECK: wmma.load.c.sync.aligned.row.{phys}.global\n"
              f"CHECK: wmma.load.a.sync.aligned.row.{phys}.global.{{{{[a-z0-9]+}}}} "
              f"{{{{.*}}}}, {stride};\n"
              f"CHECK: wmma.mma.sync.aligned.row.col.{phys}\n"
              f"CHECK: wmma.store.d.sync.aligned.col.{phys}.global")
    assert text.count("wmma.mma.") == mmas
    m, n = (int(x) for x in shape[1:].split("k")[0].split("n"))
    pm, pn = (int(x) for x in phys[1:].split("k")[0].split("n"))
    grid = (m // pm) * (n // pn)
    # fragment reuse: each chunk loads every A and B subtile exactly once
    chunks = mmas // grid
    assert text.count("wmma.load.a.") + text.count("wmma.load.b.") == \
        chunks * (m // pm + n // pn)


@pytest.mark.parametrize("fmt", ["i4", "u4"])
def test_subbyte_wmma(ptxas, fmt):
    src = mma_source("k", fmt, fmt, "i32", "i32", "m8n8k32",
                     layouts=("row", "col", "row", "row"), extra="overflow: saturate_finite")
    text = assemble_all(ptxas, src)["sm_121a"]
    s = "s4" if fmt == "i4" else "u4"
    filecheck(text, f"CHECK: wmma.mma.sync.aligned.row.col.m8n8k32.s32.{s}.{s}.s32.satfinite")


@pytest.mark.parametrize("math,op", [("xor_popcount", "xor"), ("and_popcount", "and")])
def test_b1_popcount(ptxas, math, op):
    src = mma_source("k", "b1", "b1", "i32", "i32", "m8n8k128",
                     layouts=("row", "col", "row", "row"), extra=f"math: {math}")
    text = assemble_all(ptxas, src)["sm_90a"]
    filecheck(text, f"CHECK: wmma.mma.{op}.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32")


def test_f64_rounding_and_workgroup_scope(ptxas):
    src = mma_source("k", "f64", "f64", "f64", "f64", "m8n8k4",
                     extra="rounding: down, scope: workgroup")
    text = assemble_all(ptxas, src)["sm_90a"]
    filecheck(text, "CHECK: bar.sync 0\nCHECK: %tid.x\nCHECK: wmma.mma.sync.aligned.row.row"
              ".m8n8k4.rm.f64\nCHECK: bar.sync 0")


@pytest.mark.parametrize("fmt,acc,shape", [("f16", "f32", "m16n16k16"),
                                           ("bf16", "f32", "m32n64k16"),
                                           ("f64", "f64", "m8n8k4"), ("i8", "i32", "m16n16k16"),
                                           ("u8", "i32", "m32n32k16")])
def test_matmul_native_interior_and_replay(ptxas, fmt, acc, shape):
    src = matmul_source("k", fmt, fmt, acc, acc, shape, layouts=("row", "col", "row", "row"),
                        transpose=(False, True), warps=2)
    text = assemble_all(ptxas, src)["sm_121a"]
    filecheck(text, "CHECK: activemask.b32\nCHECK: @!%p{{[0-9]+}} bra.uni $L__tmm_replay\n"
              "CHECK: div.u32\nCHECK: wmma.load.c\nCHECK: $L__tmm_k{{[0-9]+}}:\n"
              "CHECK: wmma.mma.sync.aligned.row.row\nCHECK: @%p{{[0-9]+}} bra.uni $L__tmm_k\n"
              "CHECK: wmma.store.d\nCHECK: bar.warp.sync -1\nCHECK: $L__trp_e\n"
              "CHECK: $L__tmm_replay{{[0-9]+}}:\nCHECK: popc.b32\nCHECK: mul.wide.u32\n"
              "CHECK: $L__tmm_end{{[0-9]+}}:\nCHECK-NEXT: activemask.b32\n"
              "CHECK-NEXT: bar.warp.sync")
    fma = {"f16": "fma.rn.f32", "bf16": "fma.rn.f32", "f64": "fma.rn.f64",
           "i8": "mad.lo.s32", "u8": "mad.lo.s32"}[fmt]
    assert fma in text


def test_matmul_over_tuple_budget_always_replays(ptxas):
    src = matmul_source("k", "f16", "f16", "f32", "f32", "m128n128k16")
    text = assemble_all(ptxas, src)["sm_90a"]
    assert "wmma." not in text and "fma.rn.f32" in text


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("mode,act", [("none", "identity"), ("row", "relu"),
                                      ("column", "clamp"), ("matrix", "relu")])
def test_epilogue_forms(ptxas, fmt, mode, act):
    for scope, barrier in (("subgroup", "bar.warp.sync"), ("workgroup", "bar.sync 0")):
        src = epilogue_source("k", fmt, "m16n24", layout="col", bias_mode=mode,
                              bias_layout="col", activation=act, ld=20, ldbias=30,
                              runtime_ld=mode == "matrix", scope=scope)
        text = assemble_all(ptxas, src)["sm_90a"]
        ty = "f64" if fmt == "f64" else "f32"
        checks = f"CHECK: {barrier}\nCHECK: mul.rn.{ty}\n"
        if mode != "none":
            checks += f"CHECK: add.rn.{ty}\n"
        if act == "relu":
            checks += f"CHECK: setp.lt.{ty}\n"
        if act == "clamp":
            checks += f"CHECK: setp.lt.{ty}\nCHECK: setp.gt.{ty}\n"
        if fmt in ("f16", "bf16"):
            checks += f"CHECK: cvt.rn.{fmt}.f32\n"
        filecheck(text, checks + f"CHECK: {barrier}")


def refusal(src: str, arch: str):
    with pytest.raises(CompileError) as info:
        compile_ptx(src, arch)
    return info.value.diagnostics[0]


@pytest.mark.parametrize("fmt,extra,arch,want", [
    ("tf32", "", "portable", "PTX ISA 7.0 and target sm_80"),      # replay would be inexact
])
def test_capability_refusals_name_isa_and_target(fmt, extra, arch, want):
    acc = "f32"
    shape = {"tf32": "m16n16k8"}[fmt]
    d = refusal(mma_source("k", fmt, fmt, acc, acc, shape,
                           layouts=("row", "col", "row", "row")), arch)
    assert d.code == "E0504" and want in d.message and "compute_75" in d.message
    assert d.span is not None


@pytest.mark.parametrize("fmt,shape,scope", [("bf16", "m32n16k16", "subgroup"),
                                             ("f64", "m16n8k8", "workgroup")])
def test_tiles_without_native_wmma_replay_exactly(ptxas, fmt, shape, scope):
    """bf16/f64 WMMA needs sm_80: the portable profile replays the whole tile instead."""
    acc = "f64" if fmt == "f64" else "f32"
    src = mma_source("k", fmt, fmt, acc, acc, shape, layouts=("col", "row", "row", "col"),
                     lds={"lda": 40, "ldb": 24, "ldc": 20, "ldd": 36}, runtime_ld=True,
                     extra=f"scope: {scope}" + (", rounding: down" if fmt == "f64" else ""))
    ptx = compile_ptx(src, "portable")
    ptxas(ptx, "sm_75")
    want = "fma.rm.f64" if fmt == "f64" else "fma.rn.f32"
    filecheck(ptx, "CHECK: activemask.b32\n" + f"CHECK: {want}\n" + "CHECK-NOT: wmma")


def test_f64_region_replay_uses_the_descriptor_rounding():
    src = matmul_source("k", "f64", "f64", "f64", "f64", "m8n8k4",
                        layouts=("row", "col", "row", "row"), extra="rounding: toward_zero")
    ptx = compile_ptx(src, "sm_90a")
    assert "wmma.mma.sync.aligned.row.col.m8n8k4.rz.f64" in ptx
    assert "fma.rz.f64" in ptx and "fma.rn.f64" not in ptx


def test_and_popcount_needs_sm80():
    src = mma_source("k", "b1", "b1", "i32", "i32", "m8n8k128",
                     layouts=("row", "col", "row", "row"), extra="math: and_popcount")
    d = refusal(src, "sm_75")
    assert d.code == "E0504" and "PTX ISA 7.1 and target sm_80" in d.message


@pytest.mark.parametrize("src,fragment", [
    (mma_source("k", "f16", "f16", "f32", "f32", "m24n16k16"), "shapes are"),
    (mma_source("k", "i4", "i4", "i32", "i32", "m8n8k32"), "A row-major and B column-major"),
    (mma_source("k", "f16", "f16", "f32", "f32", "m16n16k16",
                extra="overflow: saturate_finite"), "integer MMA only"),
    (matmul_source("k", "tf32", "tf32", "f32", "f32", "m16n16k8"), "TF32"),
    (matmul_source("k", "f16", "f16", "f16", "f16", "m16n16k16"), "reduced-precision"),
    (matmul_source("k", "i8", "i8", "i32", "i32", "m16n16k16",
                   extra="overflow: saturate_finite"), "saturating"),
])
def test_unsupported_descriptors_are_refused_not_narrowed(src, fragment):
    d = refusal(src, "sm_90a")
    assert d.code == "E0505" and fragment in d.message
