"""The wgmma form of register-resident tiles (toolchain/compiler/frontend/tile_wgmma.py,
--gpu-tile-wgmma=on, sm_90a): which kernels take it and why not (`--explain`), the
synchronisation it spells in PTX, that ptxas 13.0 assembles every variant with no stack,
no wgmma notice and at most 255 registers, and, on the CPU model of wgmma
(wgfrag_sim.py), the cases test_tile_wgmma.py does not run: back-to-back loads,
element-by-element copies from workgroup memory, the d16 and the shipped d128 attention."""
from __future__ import annotations

import re

import pytest

from .test_tile_frag import (FROM_WORKGROUP, MATMUL, TWO_LOADS, check_attention,
                             check_from_workgroup, check_two_loads, compile_attention,
                             compile_text, layout_remark)
from tests.ptx.source import find_nvdisasm, sass

from .sass_loops import clobbered_a_operands
from .wgfrag_sim import run_wgfrag

WG = {"arch": "sm_90a", "tile_wgmma": True, "tile_wgmma_a": "registers"}   # A in registers


def _matmul(layout: str) -> str:
    return MATMUL.replace(" LAYOUT", ", layout: col" if layout == "col" else "")


@pytest.mark.parametrize("layout,swizzle", [("row", 32), ("col", 64)])
def test_matmul_kernels_take_the_wgmma_form(tmp_path, layout, swizzle):
    """MATMUL's b of 32 x 48: by rows an MN-major b of 48 contiguous elements (the 32-byte
    swizzle), column-major a K-major b of 32 (the 64-byte one). (Exactness on the wgmma
    model: test_tile_wgmma.py.)"""
    objects, explain = compile_text(tmp_path, _matmul(layout), **WG)
    assert layout_remark(explain).endswith(
        f"on wgmma (A from registers), shared tiles in the {swizzle}-byte swizzled layout: "
        "`tb`")
    text = compile_text.ptx
    assert "mma.sync" not in text and "ldmatrix" not in text
    trans = 1 if layout == "row" else 0
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n48k16\.f32\.f16\.f16 "
                     rf"\{{[^}}]*\}}, \{{[^}}]*\}}, %rd\d+, %p\d+, 1, 1, {trans};", text)


def test_back_to_back_loads_and_element_copies_on_wgmma(tmp_path):
    objects, _ = compile_text(tmp_path, TWO_LOADS, **WG)
    check_two_loads(run_wgfrag, objects)
    objects, explain = compile_text(tmp_path, FROM_WORKGROUP, **WG)
    assert "on wgmma" in layout_remark(explain)
    assert "cp.async.cg" not in compile_text.ptx and "st.shared.u16" in compile_text.ptx
    check_from_workgroup(run_wgfrag, objects)


@pytest.mark.parametrize("fmt,n,causal,d,block_m,block_n,work_items", [
    ("f16", 70, True, 16, 64, 16, 128),       # 32-byte swizzles, five key blocks
    ("f16", 100, True, 128, 128, 64, 256),    # the shipped d128 variant: two warpgroups
])
def test_attention_variants_beyond_the_model_suite(tmp_path, fmt, n, causal, d, block_m,
                                                    block_n, work_items):
    """Shapes test_tile_wgmma.py does not run: d16 (every shared tile 32-byte swizzled)
    and the shipped d128 block (BLOCK_M 128, 256 work-items)."""
    objects, explain = compile_attention(tmp_path, fmt, d, block_m, block_n, work_items,
                                         **WG)
    assert "on wgmma" in layout_remark(explain)
    check_attention(run_wgfrag, objects, fmt, n, d, causal, block_m, work_items,
                    2 if work_items == 128 else 1)


def test_the_example_spells_the_synchronisation(tmp_path):
    """Each publishing barrier follows a proxy fence that follows the copy wait; each
    matmul is fence, its k steps, commit, wait 0 (nothing touches the accumulators in
    between); no ldmatrix or mma.sync is left."""
    _, explain = compile_attention(tmp_path, "f16", 64, 128, 128, 256, **WG)
    assert layout_remark(explain).endswith(
        "(8 subgroups) on wgmma (A from registers), shared tiles in the 128-byte swizzled "
        "layout: `kt`, `vt`")
    lines = [x.strip() for x in compile_text.ptx.splitlines()]
    assert ".shared .align 1024 .b8 attention_tile_kt[16384];" in lines
    assert ".shared .align 1024 .b8 attention_tile_vt[16384];" in lines
    assert not [x for x in lines if x.startswith(("ldmatrix", "mma.sync"))]
    bars = [i for i, x in enumerate(lines) if x.startswith("bar.sync")]
    assert len(bars) == 3
    for i in bars:
        assert lines[i - 1] == "fence.proxy.async.shared::cta;"
        assert lines[i - 2].startswith("cp.async.wait_group")
    groups = re.findall(r"wgmma\.fence\.sync\.aligned;\n((?:\s*wgmma\.mma_async[^\n]*\n)+)"
                        r"\s*wgmma\.commit_group\.sync\.aligned;\n"
                        r"\s*wgmma\.wait_group\.sync\.aligned 0;", compile_text.ptx)
    assert [g.count("m64n128k16") for g in groups] == [4, 0]
    assert [g.count("m64n64k16") for g in groups] == [0, 8]
    assert compile_text.ptx.count("wgmma.mma_async") == 12


def test_a_loop_invariant_a_operand_reaches_wgmma_through_a_shuffle(tmp_path):
    """Q (loaded before the key loop) reaches each S group through an identity shuffle of
    its own, P (packed in the loop's block) directly: ptxas 13.0 gave a loop-invariant
    register read only by wgmma to other values inside the loop (lower_tile._held; wrong
    on the H100 for HEAD_DIM = BLOCK_N = 64 without it)."""
    compile_attention(tmp_path, "f16", 64, 64, 64, 128, **WG)
    text = compile_text.ptx
    defs = {m.group(2): m.group(0).strip() for m in
            re.finditer(r"^\s*([a-z][\w.]*) (%r\d+), ([^{};\n]*);$", text, re.M)}
    groups = re.findall(r"wgmma\.mma_async[^{]*\{[^}]*\}, \{([^}]*)\}", text)
    assert len(groups) == 8                      # S (4 k steps), then P·V (4)
    for k, regs in enumerate(groups):
        for r in regs.split(", "):
            shuffled = re.fullmatch(r"shfl\.sync\.bfly\.b32 %r\d+, %r\d+, 0, 31, -1;",
                                    defs[r]) is not None
            assert shuffled == (k < 4), (k, r, defs[r])


_LOOP = """
        /*0100*/                   IMAD.MOV.U32 R56, RZ, RZ, R9 ;
.L_x_1:
        /*0110*/                   {shfl}
        /*0120*/                   WARPGROUP.ARRIVE ;
        /*0130*/                   HGMMA.64x64x16.F32 R24, R56, gdesc[UR16], RZ, !UPT, gsb0 ;
        /*0140*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0150*/                   F2FP.F16.F32.PACK_AB R57, R25, R24 ;
        /*0160*/               @P0 BRA `(.L_x_1) ;
"""


def test_the_sass_check_finds_a_clobbered_loop_invariant_a_operand():
    """The pattern ptxas 13.0 made of HEAD_DIM = BLOCK_N = 64 attention (A registers set
    before the loop, overwritten inside it), and the same loop when each iteration first
    writes its A registers (the shuffles of lower_tile._held)."""
    bad = clobbered_a_operands(_LOOP.replace("{shfl}", "NOP ;"))
    assert bad == ["R57 (A of `HGMMA.64x64x16.F32 R24, R56, gdesc[UR16], RZ, !UPT, gsb0`) "
                   "written in the loop by `F2FP.F16.F32.PACK_AB R57, R25, R24`"]
    shuffled = "SHFL.BFLY PT, R56, R9, RZ, 0x1f ;\n        /*0118*/ SHFL.BFLY PT, R57, R8, " \
               "RZ, 0x1f ;\n        /*011c*/ SHFL.BFLY PT, R58, R7, RZ, 0x1f ;\n" \
               "        /*011e*/ SHFL.BFLY PT, R59, R6, RZ, 0x1f ;"
    assert clobbered_a_operands(_LOOP.replace("{shfl}", shuffled)) == []


@pytest.mark.parametrize("d,block_n", [(64, 128), (128, 64), (64, 64)])
def test_ptxas_keeps_the_loop_invariant_a_operands(ptxas_path, tmp_path, d, block_n):
    """ptxas's SASS of the shipped attention blocks (and d64 with 64 keys a step) has no
    HGMMA A register that a loop overwrites after reading it (sass_loops.py): the
    miscompile behind lower_tile._held. Needs nvdisasm beside ptxas or on PATH."""
    nvdisasm = find_nvdisasm(ptxas_path)
    if nvdisasm is None:
        pytest.skip("no nvdisasm (the nvidia-cuda-nvdisasm wheel, or on PATH)")
    compile_attention(tmp_path, "f16", d, 64, block_n, 128, **WG)
    assert clobbered_a_operands(sass(ptxas_path, nvdisasm, compile_text.ptx)) == []


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_attention_variants_on_wgmma_fit_the_registers(ptxas_path, tmp_path, d, fmt):
    """The four shipped variants (block 256) with the option on: ptxas 13.0 reports no
    stack frame, no spills, at most 255 registers, 32 KiB of static shared memory and
    no notice about the wgmma instructions."""
    from tools.gpu.ptxas_runner import assemble

    _, explain = compile_attention(tmp_path, fmt, d, 128, 8192 // d, 256, **WG)
    assert "on wgmma" in layout_remark(explain)
    path = tmp_path / "attention.ptx"
    path.write_text(compile_text.ptx)
    report, (res,) = assemble(ptxas_path, "sm_90a", str(path))
    # no C75xx notice: wgmma serialized (C7515), warpgroup.arrive/wait injected (C7519,
    # C7517) where ordinary code touches wgmma registers unfenced
    assert "(C75" not in report, report
    assert res.stack_frame_bytes == 0
    assert res.spill_stores_bytes == 0 and res.spill_loads_bytes == 0
    assert res.registers <= 255
    assert res.shared_bytes == 32 * 1024


@pytest.mark.parametrize("d,a_place,most", [(64, "registers", 200), (128, "registers", 210),
                                            (128, "shared", 140)])
def test_the_accumulator_is_carried_in_its_wgmma_registers(ptxas_path, tmp_path, d,
                                                           a_place, most):
    """The shipped attention blocks (64 rows, 128 work-items): the P·V accumulator's
    loop slot, its loop-head value and the wgmma D vector are one PTX register
    (targets/ptx/coalesce.py), so no `mov` copies it, and ptxas keeps it in place: before
    the pass it copied the accumulator back after every P·V group and used 242 (d64),
    254 (d128) and 167 (d128, Q in workgroup memory) registers."""
    compile_attention(tmp_path, "f16", d, 64, 8192 // d, 128,
                      **{**WG, "tile_wgmma_a": a_place})
    ptx = compile_text.ptx
    pv = [x for x in ptx.splitlines() if f"m64n{d}k16" in x][-1]
    _check_no_accumulator_copies(ptxas_path, tmp_path, "sm_90a", ptx, _d_registers(pv), most)


def _d_registers(line: str) -> set[str]:
    """The registers of a tensor-core instruction's first vector operand (its D)."""
    return set(re.search(r"\{([^}]*)\}", line).group(1).split(", "))


def _check_no_accumulator_copies(ptxas_path, tmp_path, arch, ptx, acc, most) -> None:
    """No register-to-register `mov.f32` touches the accumulator registers `acc`, and
    ptxas assembles `ptx` with no stack, no spills and at most `most` registers."""
    from tools.gpu.ptxas_runner import assemble

    copies = [x for x in ptx.splitlines() if x.strip().startswith("mov.f32")
              and acc & set(re.findall(r"%f\d+", x)) and "0f" not in x]
    assert copies == []
    path = tmp_path / "attention.ptx"
    path.write_text(ptx)
    _, (res,) = assemble(ptxas_path, arch, str(path))
    assert res.stack_frame_bytes == 0 and res.spill_stores_bytes == 0
    assert res.registers <= most, res.registers


@pytest.mark.parametrize("d", [64, 128])
def test_a_shared_q_descriptor_lives_in_uniform_registers(ptxas_path, tmp_path, d):
    """With Q in workgroup memory its descriptors depend on the warpgroup's slab, which
    ptxas cannot see is the same across a warp; lane 0's address is broadcast
    (lower_tile._descriptors), so it builds them in uniform registers like K's and V's.
    Without the broadcast the d128 kernel moved them over (`R2UR`) 17 times, twice per S
    wgmma. Needs nvdisasm beside ptxas or on PATH."""
    nvdisasm = find_nvdisasm(ptxas_path)
    if nvdisasm is None:
        pytest.skip("no nvdisasm (the nvidia-cuda-nvdisasm wheel, or on PATH)")
    compile_attention(tmp_path, "f16", d, 64, 8192 // d, 128, **{**WG, "tile_wgmma_a": "shared"})
    assert "shfl.sync.idx.b32" in compile_text.ptx
    code = sass(ptxas_path, nvdisasm, compile_text.ptx)
    assert code.count("R2UR") <= 4, code.count("R2UR")


@pytest.mark.parametrize("arch,most", [("sm_80", 180), ("sm_90a", 185)])
def test_the_mma_sync_accumulator_is_carried_in_its_registers(ptxas_path, tmp_path, arch,
                                                              most):
    """The same on the warp MMA form (d64, --gpu-tile-wgmma=off): before the pass ptxas
    used 204 registers on sm_80 and 208 on sm_90a."""
    compile_attention(tmp_path, "f16", 64, 64, 128, 128, arch=arch, tile_wgmma=False)
    ptx = compile_text.ptx
    acc = set().union(*(_d_registers(x) for x in ptx.splitlines()
                        if x.strip().startswith("mma.sync")))
    assert acc
    _check_no_accumulator_copies(ptxas_path, tmp_path, arch, ptx, acc, most)


def test_ptxas_assembles_the_matmul_kernels(ptxas, tmp_path):
    for src in (_matmul("row"), _matmul("col"), TWO_LOADS, FROM_WORKGROUP):
        compile_text(tmp_path, src, **WG)
        assert "wgmma.mma_async" in compile_text.ptx
        ptxas(compile_text.ptx, "sm_90a")


def seven_tiles() -> str:
    """Seven 16 x 208 shared tiles: 48384 bytes padded (the mma.sync form fits), 50176
    with each swizzled tile's base 1024-byte aligned."""
    loads = "".join(f"    var b{i}: tile<f16, 16, 208> = tile_load(b, {16 * i}, 0, 112, 208);\n"
                    for i in range(7))
    stores = "".join(f"    tile_store(d, tensor_matmul(ta, b{i}), 0, {i}, 64, 208);\n"
                     for i in range(7))
    return ("kernel(block = 128) seven(a: uint16*, b: uint16*, d: float32*) {\n"
            "    var ta: tile<f16, 64, 16> = tile_load(a, 0, 0, 64, 16);\n" + loads + stores
            + "}\n")


def test_explain_says_why_a_kernel_keeps_mma_sync(tmp_path):
    """The tile types' rules (extents 1 or multiples of 16 up to 256, blocks of whole
    warpgroups) leave wgmma's shape rules nothing to refuse; the workgroup memory of the
    swizzled layout can be."""
    _, explain = compile_text(tmp_path, seven_tiles(), **WG)
    remark = layout_remark(explain)
    assert remark.endswith("not on wgmma: the swizzled shared tiles need 50176 bytes of "
                           "workgroup memory (at most 49152)"), remark
    assert "mma.sync" in compile_text.ptx and "wgmma" not in compile_text.ptx


@pytest.mark.parametrize("arch,opts", [("sm_90a", {"tile_wgmma": False}), ("sm_80", {}),
                                       ("sm_80", {"tile_wgmma": True})])
def test_the_option_off_or_a_target_without_wgmma_keeps_mma_sync(tmp_path, arch, opts):
    _, explain = compile_text(tmp_path, _matmul("row"), arch=arch, **opts)
    assert layout_remark(explain).endswith("(workgroup memory, ldmatrix): `tb`")
    assert "wgmma" not in compile_text.ptx and "fence.proxy" not in compile_text.ptx


def test_sm_90a_takes_wgmma_by_default(tmp_path):
    # the default since the H200 ran both forms (tile-wgmma.md "Measured"), with a loaded
    # A tile in workgroup memory since it ran both placements (the same page)
    _, explain = compile_text(tmp_path, _matmul("row"), arch="sm_90a")
    assert "on wgmma (A from shared tiles (`ta`) or registers)" in layout_remark(explain)
    assert "wgmma.mma_async" in compile_text.ptx
