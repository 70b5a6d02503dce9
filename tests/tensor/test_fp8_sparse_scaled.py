"""FP8 mma.sync, structured 2:4 mma.sp and block-scaled tensor operations on PTX:
FileCheck of the selected instruction forms, ptxas assembly (sm_90a for FP8/sparse, sm_121a
for everything), capability refusals naming the PTX ISA and target, and execution of the
emitted PTX on the CPU interpreter (ptx_sim.py) against the CPU oracle. The interpreter's
warp MMAs follow the PTX ISA fragment maps; hardware numerics are tests/gpu's job.
"""
from __future__ import annotations

import pytest

from tests.support.filecheck import filecheck
from toolchain.compiler.diagnostics import CompileError

from . import narrow_cases as NC
from .kernels import compile_ptx, compile_ptx_objects, matmul_source, mma_source
from .ptx_sim import Sim

META = dict(extra="sparsity: structured_2_to_4, metadata: meta",
            more_params=("meta: uint8*",))


def assemble(ptxas, src: str, archs=("sm_90a", "sm_121a"), version=None) -> dict[str, str]:
    out = {}
    for arch in archs:
        out[arch] = compile_ptx(src, arch, version)
        ptxas(out[arch], arch)
    return out


def simulate(case: NC.Case, arch: str = "sm_90a") -> Sim:
    sim = Sim(compile_ptx_objects(case.source, arch), case.kernel)
    mem = sim.run(case.grid, case.block,
                  [a[:3] if a[0] == "buf" else a for a in case.args])
    case.check({a[1]: mem.read(a[1]) for a in case.args if a[0] == "buf" and a[3]})
    return sim


def refusal(src: str, arch: str, version=None):
    with pytest.raises(CompileError) as info:
        compile_ptx(src, arch, version)
    d = info.value.diagnostics[0]
    assert d.span is not None
    return d


# ---------------------------------------------------------------- FP8 mma.sync
@pytest.mark.parametrize("at,bt,shape,k32,k16", [
    ("e4m3", "e4m3", "m16n8k32", 1, 0), ("e4m3", "e5m2", "m16n8k16", 0, 1),
    ("e5m2", "e4m3", "m32n16k48", 4, 4), ("e5m2", "e5m2", "m64n32k64", 32, 0)])
def test_fp8_tile_forms_assemble(ptxas, at, bt, shape, k32, k16):
    src = mma_source("k", at, bt, "f32", "f32", shape, layouts=("col", "row", "col", "row"),
                     transpose=(True, True), lds={"lda": 72, "ldb": 80, "ldc": 68, "ldd": 70},
                     runtime_ld=True)
    text = assemble(ptxas, src)["sm_90a"]
    head = f"mma.sync.aligned.m16n8k{32 if k32 else 16}.row.col.f32.{at}.{bt}.f32"
    filecheck(text, f"CHECK: %laneid\nCHECK: ld.global.f32\nCHECK: ld.global.u8\n"
              f"CHECK: prmt.b32\nCHECK: {head}\nCHECK: st.global.f32")
    assert text.count(".m16n8k32.") == k32 and text.count(".m16n8k16.") == k16


@pytest.mark.parametrize("case", [
    lambda: NC.fp8_tile("e4m3", "e5m2", "m32n16k48", transpose=(True, False)),
    lambda: NC.fp8_tile("e5m2", "e5m2", "m16n8k16", layouts=("col", "row", "col", "row")),
    lambda: NC.fp8_tile("e4m3", "e4m3", "m16n16k32", transpose=(False, True),
                        scope="workgroup"),
], ids=["mixed-grid-k48-transA", "e5m2-k16-layouts", "workgroup-transB"])
def test_fp8_tile_executes_exactly_on_cpu_interpreter(case):
    assert simulate(case()).mmas > 0


def test_fp8_matmul_interior_and_replay_assemble(ptxas):
    src = matmul_source("k", "e4m3", "e5m2", "f32", "f32", "m32n16k32",
                        layouts=("row", "col", "row", "col"), transpose=(True, False), warps=2)
    text = assemble(ptxas, src)["sm_90a"]
    filecheck(text, "CHECK: activemask.b32\nCHECK: @!%p{{[0-9]+}} bra.uni $L__tms_replay\n"
              "CHECK: div.u32\nCHECK: $L__tms_k{{[0-9]+}}:\n"
              "CHECK: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32\n"
              "CHECK: @%p{{[0-9]+}} bra.uni $L__tms_k\nCHECK: st.global.f32\n"
              "CHECK: bar.warp.sync -1\nCHECK: cvt.rn.f16x2.e4m3x2\n"
              "CHECK: cvt.rn.f16x2.e5m2x2\nCHECK: fma.rn.f32\n"
              "CHECK: $L__tms_replay{{[0-9]+}}:\nCHECK: $L__tms_end{{[0-9]+}}:\n"
              "CHECK-NEXT: activemask.b32\nCHECK-NEXT: bar.warp.sync")
    assert text.count("mma.sync") == 4          # 2x2 m16n8 subtiles, one runtime loop


@pytest.mark.parametrize("args,native", [
    (("e4m3", "e5m2", "m16n16k32", 19, 23, 21), False),
    (("e5m2", "e4m3", "m16n8k16", 32, 16, 40), True),
    (("e4m3", "e4m3", "m32n16k32", 40, 35, 70), True),
], ids=["19x23x21-replay", "k16-interior-tail", "grid-interior-tail"])
def test_fp8_matmul_executes_exactly_on_cpu_interpreter(args, native):
    sim = simulate(NC.fp8_matmul(*args, transpose=(True, True) if native else (False, False)))
    assert (sim.mmas > 0) == native


# ---------------------------------------------------------------- structured 2:4
@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_sparse_tile_ordered_metadata(ptxas, t):
    src = mma_source("k", t, t, "f32", "f32", "m32n16k32", layouts=("col", "row", "row", "col"),
                     transpose=(True, False), lds={"lda": 40, "ldb": 24, "ldc": 20, "ldd": 36},
                     runtime_ld=True, **META)
    text = assemble(ptxas, src)["sm_121a"]
    head = f"mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32"
    filecheck(text, f"CHECK: mov.b64 %rd{{{{[0-9]+}}}}, 0x444e4dc449844444\n"
              f"CHECK: ld.global.u8\nCHECK: shr.b64\nCHECK: bfi.b32\n"
              f"CHECK: {head} {{{{.*}}}}, %r{{{{[0-9]+}}}}, 0;")
    assert text.count("mma.sp") == 2 * 2 * 2      # 2x2 subtiles x 2 K16 chunks


def test_sparse_before_ptx_8_5_uses_unordered_metadata(ptxas):
    src = mma_source("k", "f16", "f16", "f32", "f32", "m16n8k16", **META)
    text = assemble(ptxas, src, archs=("sm_90a",), version="8.4")["sm_90a"]
    assert "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in text
    assert "ordered_metadata" not in text


def test_sparse_matmul_interior_and_replay_assemble(ptxas):
    src = matmul_source("k", "bf16", "bf16", "f32", "f32", "m16n16k16",
                        layouts=("row", "col", "row", "col"), warps=2, **META)
    text = assemble(ptxas, src)["sm_90a"]
    filecheck(text, "CHECK: @!%p{{[0-9]+}} bra.uni $L__tms_replay\nCHECK: $L__tms_k\n"
              "CHECK: mma.sp::ordered_metadata\nCHECK: bar.warp.sync -1\n"
              "CHECK: $L__tsp_g\nCHECK: bfe.u32\nCHECK: fma.rn.f32\n"
              "CHECK: $L__tms_replay{{[0-9]+}}:\nCHECK: $L__tsp_g")


@pytest.mark.parametrize("case", [
    lambda: NC.sparse_tile("f16", "m16n8k16"),
    lambda: NC.sparse_tile("bf16", "m32n16k32", layouts=("col", "row", "col", "row"),
                           transpose=(True, False), invalid=True),
    lambda: NC.sparse_tile("f16", "m16n16k16", transpose=(False, True), invalid=True),
], ids=["f16-tile", "bf16-grid-transA-invalid-masks", "f16-transB-invalid-masks"])
def test_sparse_tile_executes_exactly_on_cpu_interpreter(case):
    assert simulate(case()).mmas > 0


@pytest.mark.parametrize("args,kw,native", [
    (("f16", "m16n16k16", 19, 23, 19), {}, True),
    (("bf16", "m32n16k16", 64, 32, 37), dict(warps=2), True),
    (("f16", "m16n8k16", 16, 16, 32), dict(transpose=(True, True)), True),
], ids=["19x23x19-tails", "grid-interior-tail", "interior-transposed"])
def test_sparse_matmul_executes_exactly_on_cpu_interpreter(args, kw, native):
    sim = simulate(NC.sparse_matmul(*args, invalid=True, **kw))
    assert (sim.mmas > 0) == native


def test_sparse_matmul_partial_warp_replays_exactly():
    sim = simulate(NC.sparse_matmul("f16", "m16n16k16", 16, 16, 16, block=20))
    assert sim.mmas == 0


# ---------------------------------------------------------------- refusals
FP8_K16 = mma_source("k", "e4m3", "e5m2", "f32", "f32", "m16n8k16")


# FP8 below sm_89 and 2:4 below sm_80 replay exactly now (test_replay_profiles.py); what
# stays refused: the m16n8k16 FP8 form on a profile that has the k32 one but not PTX 8.7.
@pytest.mark.parametrize("src,arch,version,want", [
    (FP8_K16, "sm_90a", "8.4", "PTX ISA 8.7 and target sm_89"),
])
def test_capability_refusals_name_isa_and_target(src, arch, version, want):
    d = refusal(src, arch, version)
    assert d.code == "E0504" and want in d.message


@pytest.mark.parametrize("src,fragment", [
    (mma_source("k", "e4m3", "e4m3", "f16", "f16", "m16n8k32"), "accumulates in f32"),
    (mma_source("k", "e4m3", "f16", "f32", "f32", "m16n8k32"), "E4M3/E5M2 for both"),
    (mma_source("k", "e4m3", "e4m3", "f32", "f32", "m8n8k32"), "grids of m16n8"),
    (mma_source("k", "e4m3", "e4m3", "f32", "f32", "m16n8k24"), "multiple of 16"),
    (mma_source("k", "e4m3", "e4m3", "f32", "f32", "m256n256k32"), "outputs"),
    (matmul_source("k", "e4m3", "e4m3", "f32", "f32", "m16n16k64"), "K=16 or K=32"),
    (mma_source("k", "f16", "f16", "f32", "f32", "m16n8k16",
                extra="sparsity: structured_4_to_8, metadata: meta",
                more_params=("meta: uint8*",)), "structured 2:4 is the supported ratio"),
    (mma_source("k", "f16", "f16", "f16", "f16", "m16n8k16", **META), "f32 result"),
    (mma_source("k", "i8", "i8", "i32", "i32", "m16n8k16", **META), "f16 or bf16"),
    (mma_source("k", "f16", "f16", "f32", "f32", "m16n8k16",
                extra="sparsity: structured_2_to_4, metadata: meta, scope: workgroup",
                more_params=("meta: uint8*",)), "subgroup-scoped"),
    (matmul_source("k", "f16", "f16", "f32", "f32", "m16n16k32", **META), "K=16 native"),
])
def test_unsupported_narrow_descriptors_are_refused(src, fragment):
    d = refusal(src, "sm_90a")
    assert d.code == "E0505" and fragment in d.message, d.message


# ---------------------------------------------------------------- block-scaled (sm_121a)
# The H200 cannot run these families: they are checked by ptxas -arch=sm_121a (zero spills)
# and by the CPU interpreter against the CPU oracle only.
SCALED = [
    (("e4m3", "e5m2", "m16n8k32", "block32", "ue8m0"), {}, "mxf8f6f4", "1X"),
    (("e3m2", "e2m1", "m32n16k64", "block32", "ue8m0"), dict(transpose=(True, False)),
     "mxf8f6f4", "1X"),
    (("e2m3", "e2m3", "m16n8k32", "block32", "ue8m0"),
     dict(layouts=("col", "row", "col", "row")), "mxf8f6f4", "1X"),
    (("e2m1", "e2m1", "m16n8k64", "block32", "ue8m0"), {}, "mxf4", "2X"),
    (("e2m1", "e2m1", "m32n16k128", "block16", "ue4m3"), dict(transpose=(True, True)),
     "mxf4nvf4", "4X"),
]
SCALED_IDS = ["mx-fp8", "mx-fp6xfp4-transA", "mx-fp6-layouts", "mxfp4", "nvfp4-transposed"]


def ptxas_usage(ptxas_path: str, text: str, arch: str) -> str:
    import subprocess
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "m.ptx"
        src.write_text(text)
        proc = subprocess.run([ptxas_path, f"--gpu-name={arch}", "-v", str(src), "-o",
                               str(Path(tmp) / "m.cubin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("args,kw,kind,vec", SCALED, ids=SCALED_IDS)
def test_scaled_tile_ptxas_sm121a_zero_spills_no_hardware(ptxas_path, args, kw, kind, vec):
    text = compile_ptx(NC.scaled_tile(*args, **kw).source, "sm_121a")
    at, bt, shape, _, stype = args
    k = 32 if kind == "mxf8f6f4" else 64
    filecheck(text, f"CHECK: .target sm_121a\nCHECK: mma.sync.aligned.m16n8k{k}.row.col."
              f"kind::{kind}.block_scale.scale_vec::{vec}.f32.{at}.{bt}.f32.{stype} "
              "{{.*}}, %r{{[0-9]+}}, {0, 0}, %r{{[0-9]+}}, {0, 0};")
    usage = ptxas_usage(ptxas_path, text, "sm_121a")
    assert "0 bytes spill stores, 0 bytes spill loads" in usage
    assert "0 bytes stack frame" in usage


@pytest.mark.parametrize("args,kw,kind,vec", SCALED, ids=SCALED_IDS)
def test_scaled_tile_cpu_interpreter_and_oracle_only_no_hardware(args, kw, kind, vec):
    assert simulate(NC.scaled_tile(*args, **kw), "sm_121a").mmas > 0


def test_scaled_oracle_block_scales_apply_per_k_block():
    import numpy as np

    from tests.support import tensor_oracle as O
    a, b = np.ones((1, 64)), np.ones((64, 1))
    sa = np.array([[O.decode("ue8m0", 128), O.decode("ue8m0", 126)]])   # 2, 0.5
    sb = np.array([[O.decode("ue4m3", 0x38)], [O.decode("ue4m3", 0x40)]])  # 1, 2
    got = O.scaled_matmul(a, b, np.zeros((1, 1)), sa, sb, 32)
    assert got[0, 0] == 32 * 2 * 1 + 32 * 0.5 * 2


SCALED_SRC = NC.scaled_tile("e4m3", "e4m3", "m16n8k32", "block32", "ue8m0").source


@pytest.mark.parametrize("arch,version", [("sm_90a", None), ("sm_121", None),
                                          ("sm_100a", None), ("sm_120a", "8.7")])
def test_scaled_tiles_replay_off_sm120a_sm121a(ptxas, arch, version):
    """Without the block-scaled mma.sync (PTX 8.8 sm_120a/sm_121a) a whole scaled tile is
    the exact integer-decoding replay (test_replay_profiles.py runs it)."""
    ptx = compile_ptx(SCALED_SRC, arch, version)
    ptxas(ptx, arch)
    assert "mma.sync" not in ptx


def test_scaled_sm120a_assembles(ptxas):
    ptxas(compile_ptx(SCALED_SRC, "sm_120a"), "sm_120a")


def _scaled_src(at, bt, shape, modes, stypes, matmul=False):
    opts = (f"a_scale_mode: {modes[0]}, b_scale_mode: {modes[1]}, a_scale_type: {stypes[0]}, "
            f"b_scale_type: {stypes[1]}, a_scale: sa, b_scale: sb")
    if matmul:                     # whole scale tables need explicit leading dimensions
        return matmul_source("k", at, bt, "f32", "f32", shape, extra=opts + ", ldsa: 4, ldsb: 4",
                             more_params=("sa: uint8*", "sb: uint8*"))
    return mma_source("k", at, bt, "f32", "f32", shape, extra=opts,
                      more_params=("sa: uint8*", "sb: uint8*"))


@pytest.mark.parametrize("src,fragment", [
    (_scaled_src("e4m3", "e4m3", "m16n16k32", ("block32", "block16"), ("ue8m0", "ue8m0"),
                 matmul=True), "both sides"),
    (_scaled_src("e4m3", "e4m3", "m16n8k32", ("block16", "block16"), ("ue4m3", "ue4m3")),
     "NVFP4"),
    (_scaled_src("e2m1", "e2m1", "m16n8k64", ("block32", "block16"), ("ue8m0", "ue4m3")),
     "both sides"),
    (_scaled_src("e4m3", "e4m3", "m16n8k32", ("per_tensor", "per_tensor"),
                 ("f32", "f32")).replace("sa: uint8*, sb: uint8*",
                                         "sa: float32*, sb: float32*"), "block32"),
    (_scaled_src("f16", "f16", "m16n8k32", ("block32", "block32"), ("ue8m0", "ue8m0")),
     "FP8/FP6/FP4"),
    (_scaled_src("e2m1", "e2m1", "m16n8k48", ("block16", "block16"), ("ue4m3", "ue4m3")),
     "m16n8k64"),
])
def test_unsupported_scaled_descriptors_are_refused(src, fragment):
    d = refusal(src, "sm_121a")
    assert d.code == "E0505" and fragment in d.message, d.message
