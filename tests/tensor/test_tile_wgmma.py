"""Register-resident tile matmuls on `wgmma` (the `tile_wgmma` option, --gpu-tile-wgmma=on)
run on the CPU model of wgfrag_sim.py, the only evidence without a GPU: A from the
fragment registers, b from swizzled workgroup tiles through descriptors, checked with the
model's fences, groups and proxy rules. The matmul is exact on small integers for both b
layouts, aligned and misaligned sources and ragged tails; the attention example matches
the float64 oracle (f16 and bf16, head dims 64 and 128, causal and full, n not a multiple
of the tiles); each kernel assembles with ptxas for sm_90a."""
from __future__ import annotations

import dataclasses

import pytest

from examples.attention.attention import SOURCE
from toolchain.compiler.driver import Options
from toolchain.compiler.targets.ptx.instr import OP, PtxFunction, PtxModule

from .test_tile_frag import MATMUL, check_attention, check_matmul, compile_text, layout_remark
from .ptx_sim import SimError
from .wgfrag_sim import WgFragSim

if "tile_wgmma" not in {f.name for f in dataclasses.fields(Options)}:
    pytest.skip("tile_wgmma lowering not merged", allow_module_level=True)


def compile_wgmma(tmp_path, ptxas, text: str, consts=()):
    objects, explain = compile_text(tmp_path, text, arch="sm_90a", consts=consts,
                                    tile_wgmma=True)
    remark = layout_remark(explain)
    assert "wgmma" in remark, remark
    ptx = compile_text.ptx
    assert "wgmma.mma_async" in ptx
    ptxas(ptx, "sm_90a")
    return objects


def run(objects, kernel, block, args, grid):
    """run_frag's signature on the wgmma model; the kernel must take the wgmma path."""
    sim = WgFragSim(objects, kernel)
    mem = sim.run(grid, block, args)
    assert sim.wgmmas > 0
    return mem


SHAPES = {                      # (K, N) of tb: the matmul's k16 steps and its n
    "k32n48": (32, 48),
    "k64n64": (64, 64),
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("layout,m,k,n,lda,ldb", [
    ("row", 70, 32, 48, 32, 48),          # aligned: 16-byte copies
    ("row", 64, 27, 45, 27, 48),          # ragged k and n, aligned ld
    ("row", 50, 32, 48, 33, 49),          # odd ld: element copies
    ("col", 64, 32, 48, 32, 32),          # b read column-major (Kᵀ)
    ("col", 90, 19, 41, 19, 21),          # ragged, misaligned
])
def test_matmul_on_wgmma_is_exact(tmp_path, ptxas, shape, layout, m, k, n, lda, ldb):
    kt, nt = SHAPES[shape]
    src = MATMUL.replace(" LAYOUT", ", layout: col" if layout == "col" else "") \
        .replace("tile<f16, 64, 32>", f"tile<f16, 64, {kt}>") \
        .replace("tile<f16, 32, 48>", f"tile<f16, {kt}, {nt}>") \
        .replace("tile<f32, 64, 48>", f"tile<f32, 64, {nt}>")
    if kt > 32:                 # four k16 steps, a 64-wide b: wider (still ragged) data
        lda, ldb = lda + kt - 32, ldb + (kt - 32 if layout == "col" else nt - 48)
        k, n = k + 7, n + 5
    objects = compile_wgmma(tmp_path, ptxas, src)
    check_matmul(run, objects, layout, m, k, n, lda, ldb, seed=kt)


@pytest.mark.parametrize("fmt,d,causal,n,block_m,block_n,work_items,bh", [
    ("f16", 64, True, 100, 64, 64, 128, 2),      # one warpgroup, ragged last key block
    ("bf16", 64, False, 200, 64, 64, 128, 1),
    ("f16", 128, False, 100, 64, 64, 128, 1),    # d128: Kᵀ k-steps 8, V n128 (two atoms)
    ("bf16", 128, True, 200, 64, 32, 128, 1),
    ("bf16", 64, True, 200, 128, 64, 256, 1),    # two warpgroups, the shipped block shape
])
def test_attention_on_wgmma_matches_the_float64_oracle(tmp_path, ptxas, fmt, d, causal, n,
                                                      block_m, block_n, work_items, bh):
    objects = compile_wgmma(
        tmp_path, ptxas, SOURCE.read_text(encoding="utf-8"),
        consts=(("HEAD_DIM", str(d)), ("ELEM", fmt), ("BLOCK_M", str(block_m)),
                ("BLOCK_N", str(block_n)), ("WORK_ITEMS", str(work_items))))
    check_attention(run, objects, fmt, n, d, causal, block_m, work_items, bh)


def without(objects, kernel: str, prefix: str):
    """The module with every `prefix*` instruction of `kernel` left out."""
    fn = objects.function(kernel)
    body = [i for i in fn.body if not (i.kind == OP and i.name.startswith(prefix))]
    assert len(body) < len(fn.body), prefix
    return PtxModule(objects.version, objects.target, objects.header, objects.decls,
                     [PtxFunction(fn.name, fn.kind, fn.head, fn.params, fn.reg_decls,
                                  fn.decls, body)])


@pytest.mark.parametrize("prefix,message", [
    ("fence.proxy.async", "generic-proxy write not fenced"),
    ("wgmma.fence", "wgmma.fence"),
    ("wgmma.wait_group", "not yet retired"),
])
def test_the_model_catches_the_lowerings_synchronisation_left_out(tmp_path, ptxas, prefix,
                                                                   message):
    """The kernel the matmul test passes, each kind of wgmma synchronisation removed."""
    objects = compile_wgmma(tmp_path, ptxas, MATMUL.replace(" LAYOUT", ""))
    with pytest.raises(SimError, match=message):
        check_matmul(run, without(objects, "mm", prefix), "row", 70, 32, 48, 32, 48)
