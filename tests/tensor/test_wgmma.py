"""Workgroup-scope tensor_matmul (docs/reference/gemm.md): the sm_90a TMA + mbarrier + wgmma pipeline
(FileCheck of its structure, ptxas resources: no spills, no stack, the setmaxnreg cap
honoured), the same source on sm_121a and the portable profile (split subgroup regions,
no Hopper instruction), and the refusal of regions that are not 16-multiples (SPIR-V's:
tests/spirv_emit/test_tensor_refusals.py)."""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.filecheck import filecheck
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.ptx.tensor import wgmma

from .kernels import compile_ptx
from bench.fp8_kernels import fp8_source
from bench.wgmma_kernels import gemm_source

NATIVE = """
CHECK: .global .align 128 .b8 gemm_tmaps[65536];
CHECK: .extern .shared .align 1024 .b8 gemm_wgmma_ring[];
CHECK: .maxntid 384, 1, 1
CHECK-NEXT: .minnctapersm 1
CHECK: mov.u32 {{%r[0-9]+}}, %dynamic_smem_size;
CHECK: setp.ge.and.u32 {{%p[0-9]+}}, {{%r[0-9]+}}, 197696,
CHECK: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}], 1;
CHECK: mbarrier.init.shared::cta.b64 [{{%r[0-9]+}}+8], 2;
CHECK: fence.mbarrier_init.release.cluster;
CHECK: setmaxnreg.dec.sync.aligned.u32 40;
CHECK: tensormap.replace.tile.global_address.global.b1024.b64
CHECK: tensormap.replace.tile.swizzle_mode.global.b1024.b32 [{{%rd[0-9]+}}], 3;
CHECK: fence.proxy.tensormap::generic.release.gpu;
CHECK: fence.proxy.tensormap::generic.acquire.gpu
CHECK: mbarrier.try_wait.parity.shared::cta.b64
CHECK: mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{%r[0-9]+}}], 49152;
CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
CHECK: setmaxnreg.inc.sync.aligned.u32 168;
CHECK: setmaxnreg.inc.sync.aligned.u32 232;
CHECK: mbarrier.try_wait.parity.shared::cta.b64
CHECK: wgmma.fence.sync.aligned;
CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.{fmt}.{fmt}
CHECK: wgmma.commit_group.sync.aligned;
CHECK: wgmma.wait_group.sync.aligned 1;
CHECK: mbarrier.arrive.shared::cta.b64 _,
CHECK: wgmma.wait_group.sync.aligned 0;
CHECK: cp.async.bulk.wait_group.read 1;
CHECK: st.shared.v2.f32
CHECK: fence.proxy.async.shared::cta;
CHECK: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
CHECK: cp.async.bulk.commit_group;
CHECK: st.global.v2.f32
CHECK: cp.async.bulk.wait_group 0;
CHECK: setmaxnreg.dec.sync.aligned.u32 168;
CHECK: mbarrier.inval.shared::cta.b64
CHECK: wmma.mma.sync.aligned
"""


def _usage(ptxas_path: str, text: str, arch: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "m.ptx"
        src.write_text(text)
        proc = subprocess.run([ptxas_path, f"--gpu-name={arch}", "-v", str(src), "-o",
                               str(Path(tmp) / "m.cubin")], capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr + proc.stdout


def assert_entry_cap(ptxas_path: str, text: str) -> None:
    """ptxas on sm_90a: no stack, no spills, the 168-register entry cap that `setmaxnreg`
    needs, no warning (e.g. C7508: setmaxnreg ignored) and no performance notice (C75xx,
    e.g. C7515: every wgmma of the kernel serialized, which a branch between a non-wgmma
    definition of an accumulator and its wgmma caused)."""
    usage = _usage(ptxas_path, text, "sm_90a")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in usage, usage
    assert re.search(r"Used 168 registers", usage), usage
    assert "warning" not in usage.lower(), usage
    assert "(C75" not in usage, usage


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_native_pipeline_structure(fmt):
    text = compile_ptx(gemm_source(fmt), "sm_90a")
    filecheck(text, NATIVE.replace("{fmt}", fmt))
    assert text.count("wgmma.mma_async") == 4                    # BK 64 = 4 x k16
    assert text.count("cp.async.bulk.tensor.2d.shared") == 2     # A box, B box per stage
    assert text.count("cp.async.bulk.tensor.2d.global") == 8     # D: 8 boxes of 32 f32
    assert "reqnctapercluster" not in text                       # pairing is opt-in


@pytest.mark.parametrize("fmt,bn", [("f16", 256), ("bf16", 256), ("f16", 128), ("bf16", 240)])
def test_native_resources_no_spills(ptxas_path, fmt, bn):
    assert_entry_cap(ptxas_path, compile_ptx(gemm_source(fmt, bn=bn), "sm_90a"))


@pytest.mark.parametrize("out,schedule,cluster", [("f32", "auto", 1), ("bf16", "auto", 2),
                                                  ("f16", "pingpong", 1),
                                                  ("f16", "pingpong", 2)])
def test_width_240_persistent_no_spills(ptxas_path, out, schedule, cluster):
    """m128n240k64 persistent (D from the registers: 240 columns hold no whole number of
    store boxes) within the entry cap, FP8's too. Paired ping-pong copies each half
    tile's 120 B rows as boxes of 64 and 56 rows (each on a 1024-byte swizzle atom), a
    map per rank."""
    text = compile_ptx(gemm_source("f16", bn=240, out=out, persistent=True,
                                   schedule=schedule, cluster=cluster), "sm_90a")
    assert ("m64n120k16" if schedule == "pingpong" else "m64n240k16") in text  # halves
    uneven = re.search(r"selp\.u32 %r\d+, 56, 64, %p\d+", text)
    assert bool(uneven) == (schedule == "pingpong" and cluster == 2)
    assert_entry_cap(ptxas_path, text)
    assert_entry_cap(ptxas_path, compile_ptx(fp8_source(out="bf16", bn=240, persistent=True,
                                                        schedule=schedule), "sm_90a"))


def test_paired_variant_multicasts_and_assembles(ptxas_path, monkeypatch):
    """CLUSTER = 2 (experimental): pairs agree through distributed shared memory, share B
    through a multicast copy and release stages on both workgroups' barriers."""
    monkeypatch.setattr(wgmma, "CLUSTER", 2)
    text = compile_ptx(gemm_source("f16"), "sm_90a")
    filecheck(text, """
CHECK: .reqnctapercluster 2, 1, 1
CHECK: barrier.cluster.arrive.release;
CHECK: mapa.shared::cluster.u32
CHECK: ld.shared::cluster.u32
CHECK: selp.u32 {{%r[0-9]+}}, 4, 2,
CHECK: .multicast::cluster
CHECK: mbarrier.arrive.shared::cluster.b64
""")
    usage = _usage(ptxas_path, text, "sm_90a")
    assert "0 bytes spill stores" in usage and "warning" not in usage.lower(), usage


@pytest.mark.parametrize("arch", ["sm_121a", "sm_90", "portable"])
def test_other_profiles_split_into_subgroup_regions(ptxas, arch):
    text = compile_ptx(gemm_source("f16"), arch)
    assert "wgmma" not in text and "cp.async.bulk" not in text and "setmaxnreg" not in text
    assert ".maxntid" not in text
    # 128x256 splits into 4x4 subgroup regions of 32x64 that the warps take round-robin
    filecheck(text, "CHECK: shr.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 5;\n"
              "CHECK: setp.ge.u32 {{%p[0-9]+}}, {{%r[0-9]+}}, 16;\n")
    target = {"portable": "sm_75"}.get(arch, arch)
    ptxas(text, target)


def test_descriptor_without_wgmma_form_splits_on_sm90a(ptxas):
    """B row-major has no K-major TMA box here: the region is exact split regions only."""
    src = gemm_source("f16").replace("b_layout: col", "b_layout: row")
    text = compile_ptx(src, "sm_90a")
    assert "wgmma" not in text and "wmma.mma" in text
    ptxas(text, "sm_90a")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_121a", "portable"])
def test_region_not_16_multiple_is_refused(arch):
    src = gemm_source("f16").replace("m128n256k64", "m120n256k64")
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, arch)
    d = exc.value.diagnostics[0]
    assert d.code == "E0505" and "multiples of 16" in d.message and d.span is not None


@pytest.mark.parametrize("block,native", [((384, 1, 1), True), ((128, 3, 1), True),
                                          ((256, 1, 1), False)])
def test_declared_block_shape(ptxas_path, block, native):
    """A declared block of 384 work-items keeps the pipeline (its .reqntid is the register
    cap); any other declared size compiles to split regions only."""
    src = gemm_source("f16").replace("kernel gemm(", f"kernel(block = {block}) gemm(")
    text = compile_ptx(src, "sm_90a")
    assert ("wgmma.mma_async" in text) == native
    assert ".maxntid" not in text and f".reqntid {block[0]}, {block[1]}, {block[2]}" in text
    usage = _usage(ptxas_path, text, "sm_90a")
    assert "0 bytes spill stores" in usage and "warning" not in usage.lower(), usage


def test_epilogue_loads_a_batch_of_c_before_storing_d():
    """C may alias D, so ptxas keeps every C load after the D stores before it: the
    register-store epilogue loads EPILOGUE_BATCH pairs of C before its first D store,
    else each pair would wait for its own round trip to memory; the store epilogue loads
    a whole box's C (both halves: 2 x 4 pairs of f32 columns) before its first shared
    store and, with STORE_C_AHEAD, the next box's too, then one more box before each
    box's stores (the last box's stores have none left to load)."""
    text = compile_ptx(gemm_source("f16"), "sm_90a")
    at = re.search(r"^\$L__wg_epi_direct\d+:", text, re.M).start()   # the label itself
    direct = text[at:]
    head = direct[:direct.index("st.global.v2.f32")]
    assert head.count("ld.global.v2.f32") == wgmma.EPILOGUE_BATCH == 32
    boxes = text[text.index("wgmma.wait_group.sync.aligned 0"):at]
    ahead = 2 if wgmma.STORE_C_AHEAD else 1
    # each box ends with its copy; the loads before each box's first shared store
    parts = boxes.split("cp.async.bulk.tensor.2d.global.shared::cta")[:-1]
    loads = [p[:p.index("st.shared.v2.f32")].count("ld.global.v2.f32") for p in parts]
    assert loads == [ahead * 2 * 4] + [2 * 4] * (len(parts) - ahead) + [0] * (ahead - 1)


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_rounded_result_native_epilogue(ptxas_path, fmt):
    """An f16/bf16 D (f32 accumulator, C f32): the epilogue adds C in f32 and rounds each
    pair once (cvt.rn.<fmt>x2.f32, x in the low half) into one 4-byte store; the native
    predicate asks D for 4-byte alignment only; no spills at the 168-register cap."""
    text = compile_ptx(gemm_source(fmt, out=fmt), "sm_90a")
    epilogue = text[text.index("wgmma.wait_group.sync.aligned 0"):]
    pair = re.search(r"add\.f32 (%f\d+), \1, %f\d+;\s+add\.f32 (%f\d+), \2, %f\d+;.*?"
                     rf"cvt\.rn\.{fmt}x2\.f32 (%r\d+), \2, \1;\s+@%p\d+ st\.global\.b32 "
                     r"\[%rd\d+\], \3;\s+cvt\.rn\." + fmt + r"\.f32 (%rs\d+), \1;\s+"
                     r"@%p\d+ st\.global\.b16 \[%rd\d+\], \4;", epilogue, re.S)
    assert pair, epilogue[:3000]
    assert epilogue.index("ld.global.v2.f32") < pair.start()
    assert "st.global.v2.f32" not in epilogue and "st.global.f32" not in epilogue
    assert epilogue.count("st.global.b32") == 2 * 32           # 2 row halves x 32 pairs
    usage = _usage(ptxas_path, text, "sm_90a")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in usage, usage
    assert "warning" not in usage.lower(), usage


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("arch", ["sm_121a", "portable"])
def test_rounded_result_splits_into_exact_replay(ptxas, fmt, arch):
    """The same f16/bf16-result source on the other profiles: the subgroup regions have no
    WMMA form with an f32 accumulator and a 16-bit D, so they replay exactly (f32 fma
    over K from C, one rounding into D); before sm_80 bf16 is rounded in integer
    arithmetic (nearest-even on bit 16, NaN made quiet)."""
    text = compile_ptx(gemm_source(fmt, out=fmt), arch)
    assert "wgmma" not in text and "wmma" not in text and "fma.rn.f32" in text
    if fmt == "bf16" and arch == "portable":
        assert "cvt.rn.bf16" not in text
        filecheck(text, "CHECK: setp.nan.f32\nCHECK: add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, "
                  "32767;\nCHECK: or.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 4194304;\n"
                  "CHECK: st.global.b16\n")
    else:
        filecheck(text, f"CHECK: cvt.rn.{fmt}.f32\nCHECK-NEXT: st.global.b16\n")
    ptxas(text, {"portable": "sm_75"}.get(arch, arch))


def test_rounded_result_of_other_families_is_still_refused():
    src = gemm_source("f16").replace("input_type: f16", "input_type: i8").replace(
        "a: uint16*, b: uint16*", "a: int8*, b: int8*").replace(
        "c: float32*, d: float32*", "c: int32*, d: uint16*").replace(
        "output_type: f32", "accumulator_type: i32, result_type: f16")
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0505" and "reduced-precision results are refused" in d.message


def test_producer_prefetches_c_into_l2(monkeypatch):
    """PREFETCH_C_AHEAD chunks before the end of K the producer names each in-range row of
    the region's C (16-byte-aligned inside) to L2 (opt-in: off by default)."""
    monkeypatch.setattr(wgmma, "PREFETCH_C_AHEAD", 8)
    text = compile_ptx(gemm_source("f16"), "sm_90a")
    filecheck(text, f"""
CHECK: cp.async.bulk.tensor.2d
CHECK: sub.u32 {{{{%r[0-9]+}}}}, {{{{%r[0-9]+}}}}, {wgmma.PREFETCH_C_AHEAD};
CHECK: min.u32 {{{{%r[0-9]+}}}}, {{{{%r[0-9]+}}}}, 256;
CHECK: min.u32 {{{{%r[0-9]+}}}}, {{{{%r[0-9]+}}}}, 128;
CHECK: and.b64 {{{{%rd[0-9]+}}}}, {{{{%rd[0-9]+}}}}, -16;
CHECK: cp.async.bulk.prefetch.L2.global [{{{{%rd[0-9]+}}}}], {{{{%r[0-9]+}}}};
CHECK: wgmma.mma_async
""")
    assert text.count("cp.async.bulk.prefetch.L2") == 1


def test_prefetch_is_off_by_default():
    assert wgmma.PREFETCH_C_AHEAD == 0
    assert "prefetch" not in compile_ptx(gemm_source("f16"), "sm_90a")


@pytest.mark.parametrize("persistent", [False, True])
def test_producer_takes_registers_back_only_after_the_join(persistent):
    """setmaxnreg draws on one register pool per workgroup: the producer's warps re-increase
    (to 168) only after the join barrier, which the consumers reach after decreasing
    (from 232), so no producer warp can take back the registers the consumers' increase at
    the start is waiting for (that race hung back-to-back launches)."""
    text = compile_ptx(gemm_source("f16", persistent=persistent), "sm_90a")
    dec, inc = "setmaxnreg.dec.sync.aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 168;"
    producer = text[text.index(dec):text.index(inc)]
    assert producer.rstrip().endswith("bar.sync 0;"), producer[-300:]
    cons_dec = text.index("setmaxnreg.dec.sync.aligned.u32 168;")
    assert text[cons_dec:].split("\n", 2)[1].strip() == "bar.sync 0;"
    assert text.count(inc) == 1 and text.count("setmaxnreg.inc.sync.aligned.u32 232;") == 1


@pytest.mark.parametrize("bn,schedule,out,cluster", [
    (256, "auto", "f32", 1), (240, "auto", "f32", 2), (240, "pingpong", "f16", 1),
    (232, "auto", "bf16", 2), (192, "auto", "f16", 1), (64, "pingpong", "f16", 1)])
def test_map_workspaces_hold_every_multiprocessor(bn, schedule, out, cluster):
    """Every tensor-map workspace holds tma.SLOTS multiprocessors' maps at the stride the
    kernel indexes it by %smid (a D workspace sized for one map while a clipped epilogue
    keeps two wrote past its end from the 129th multiprocessor on: compute-sanitizer
    memcheck on an H100, paired ping-pong at 240)."""
    from toolchain.compiler.targets.ptx.tensor import tma
    text = compile_ptx(gemm_source("f16", bn=bn, out=out, persistent=True,
                                   schedule=schedule, cluster=cluster), "sm_90a")
    sizes = dict(re.findall(r"\.global \.align \d+ \.b8 (\w+_tmaps\w*)\[(\d+)\];", text))
    uses = re.findall(r"mov\.u64\s+(%rd\d+), (\w+_tmaps\w*);\s*mad\.wide\.u32\s+\1, "
                      r"%r\d+, (\d+), \1;", text)
    assert uses and {sym for _, sym, _ in uses} == set(sizes)
    for _, sym, stride in uses:
        assert tma.SLOTS * int(stride) <= int(sizes[sym]), (sym, stride, sizes[sym])


@pytest.mark.parametrize("bn,schedule,tma_store", [
    (232, "auto", False), (232, "auto", True), (256, "auto", True),
    (240, "cooperative", False), (256, "pingpong", True)])
def test_paired_launches_fit_beside_the_static_pair_symbol(ptxas_path, monkeypatch, bn,
                                                           schedule, tma_store):
    """The launch's dynamic shared bytes plus what ptxas reserves statically for a
    `cluster: 2` kernel stay within the multiprocessor's limit: with D from the registers
    the 232-wide ring had taken 5 stages, 231504 bytes, and the driver refused the launch
    (cuFuncSetAttribute: 231504 + 1024 > 232448, on an H100)."""
    from toolchain.compiler.ir.tensor import TensorDesc
    monkeypatch.setattr(wgmma, "TMA_STORE", tma_store)
    text = compile_ptx(gemm_source("f16", bn=bn, out="f32", persistent=True,
                                   schedule=schedule, cluster=2), "sm_90a")
    static = re.search(r"(\d+) bytes smem", _usage(ptxas_path, text, "sm_90a"))
    assert static is not None and int(static.group(1)) <= wgmma.PAIR_STATIC_BYTES
    desc = TensorDesc(128, bn, 64, "f16", "f16", "f32", "f32", b_layout="col",
                      scope="workgroup", persistent=8, schedule=schedule)
    assert wgmma.shared_bytes(desc) + int(static.group(1)) <= wgmma.SMEM_LIMIT
