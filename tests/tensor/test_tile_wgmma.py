"""Register-resident tile matmuls on `wgmma` (the `tile_wgmma` option, --gpu-tile-wgmma=on)
run on the CPU model of wgfrag_sim.py, the only evidence without a GPU: A from the
fragment registers, b from swizzled workgroup tiles through descriptors, checked with the
model's fences, groups and proxy rules. The matmul is exact on small integers for both b
layouts, aligned and misaligned sources and ragged tails; the attention example matches
the float64 oracle (f16 and bf16, head dims 64 and 128, causal and full, n not a multiple
of the tiles); each kernel assembles with ptxas for sm_90a."""
from __future__ import annotations

import dataclasses
import re
from functools import partial

import numpy as np
import pytest

from examples.attention.attention import SOURCE
from toolchain.compiler.driver import Options
from toolchain.compiler.targets.ptx.instr import OP, PtxFunction, PtxModule

from .test_tile_frag import MATMUL, check_attention, check_matmul, compile_text, layout_remark
from .ptx_sim import SimError
from .wgfrag_sim import WgFragSim

if "tile_wgmma" not in {f.name for f in dataclasses.fields(Options)}:
    pytest.skip("tile_wgmma lowering not merged", allow_module_level=True)


def compile_wgmma(tmp_path, ptxas, text: str, consts=(), a="registers"):
    objects, explain = compile_text(tmp_path, text, arch="sm_90a", consts=consts,
                                    tile_wgmma=True, tile_wgmma_a=a)
    remark = layout_remark(explain)
    assert "wgmma" in remark, remark
    assert ("A from shared tiles" in remark) == (a == "shared"), remark
    ptx = compile_text.ptx
    assert "wgmma.mma_async" in ptx
    ptxas(ptx, "sm_90a")
    return objects


def run(objects, kernel, block, args, grid, dynamic=0):
    """run_frag's signature on the wgmma model (`dynamic`: the launch's bytes of dynamic
    workgroup memory); the kernel must take the wgmma path."""
    sim = WgFragSim(objects, kernel)
    mem = sim.run(grid, block, args, dynamic=dynamic)
    assert sim.wgmmas > 0
    return mem


SHAPES = {                      # (K, N) of tb: the matmul's k16 steps and its n
    "k32n48": (32, 48),
    "k64n64": (64, 64),
}


@pytest.mark.parametrize("a", ["registers", "shared"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("layout,m,k,n,lda,ldb", [
    ("row", 70, 32, 48, 32, 48),          # aligned: 16-byte copies
    ("row", 64, 27, 45, 27, 48),          # ragged k and n, aligned ld
    ("row", 50, 32, 48, 33, 49),          # odd ld: element copies
    ("col", 64, 32, 48, 32, 32),          # b read column-major (Kᵀ)
    ("col", 90, 19, 41, 19, 21),          # ragged, misaligned
])
def test_matmul_on_wgmma_is_exact(tmp_path, ptxas, shape, layout, m, k, n, lda, ldb, a):
    kt, nt = SHAPES[shape]
    src = MATMUL.replace(" LAYOUT", ", layout: col" if layout == "col" else "") \
        .replace("tile<f16, 64, 32>", f"tile<f16, 64, {kt}>") \
        .replace("tile<f16, 32, 48>", f"tile<f16, {kt}, {nt}>") \
        .replace("tile<f32, 64, 48>", f"tile<f32, 64, {nt}>")
    if kt > 32:                 # four k16 steps, a 64-wide b: wider (still ragged) data
        lda, ldb = lda + kt - 32, ldb + (kt - 32 if layout == "col" else nt - 48)
        k, n = k + 7, n + 5
    objects = compile_wgmma(tmp_path, ptxas, src, a=a)
    check_matmul(run, objects, layout, m, k, n, lda, ldb, seed=kt)


# A and B reloaded every K step: `ta` after the matmul (a prefetch), `tb` before it
KLOOP = """
kernel(block = 256) mmk(a: uint16*, b: uint16*, d: float32*, m: uint32, k: uint32,
                        n: uint32, lda: uint32, ldb: uint32) {
    var row0: uint32 = block.x * 128;
    var acc: tile<f32, 128, 48> = tile_fill(0.0);
    var ta: tile<f16, 128, 32> = tile_load(a, row0, 0, m, k, ld: lda);
    var k0: uint32 = 0;
    while (k0 < k) {
        var tb: tile<f16, 32, 48> = tile_load(b, k0, 0, k, n, ld: ldb);
        acc = tensor_matmul(ta, tb, acc);
        k0 = k0 + 32;
        ta = tile_load(a, row0, k0, m, k, ld: lda);
    }
    tile_store(d, acc, row0, 0, m, n);
}
"""


@pytest.mark.parametrize("m,k,n,lda", [(200, 96, 48, 96), (130, 75, 41, 77)])
def test_a_shared_tile_reloaded_every_k_step_is_exact(tmp_path, ptxas, m, k, n, lda):
    """--gpu-tile-wgmma-a=shared with `ta` loaded again after each matmul that read it
    (the load's barrier orders it after every warpgroup's read) and two warpgroups, each
    reading its own 64 rows; the matmul waits for all copies, since `tb`'s were issued
    after `ta`'s (tile_plan._waits takes the fewer of its operands' pending groups)."""
    objects = compile_wgmma(tmp_path, ptxas, KLOOP, a="shared")
    ptx = compile_text.ptx
    # both operands from descriptors (imm-trans-a 0; tb by rows: an MN-major B)
    assert re.search(r"wgmma\.mma_async\S+ \{[^}]*\}, %rd\d+, %rd\d+, %p\d+, 1, 1, 0, 1;", ptx)
    fence = ptx.index("wgmma.fence")
    wait = ptx[ptx.rindex("cp.async.wait_group", 0, fence):fence]
    assert wait.startswith("cp.async.wait_group 0;") and "bar.sync" in wait, wait
    rng = np.random.default_rng(m + k)
    amat = rng.integers(-3, 4, (m, lda)).astype(np.float16)
    bmat = rng.integers(-3, 4, (k, n)).astype(np.float16)
    mem = run(objects, "mmk", 256, [
        ("buf", "a", amat.view(np.uint16).ravel()), ("buf", "b", bmat.view(np.uint16).ravel()),
        ("buf", "d", np.full(m * n, np.nan, np.float32)),
        ("u32", m), ("u32", k), ("u32", n), ("u32", lda), ("u32", n)],
        grid=(-(-m // 128), 1, 1))
    want = amat[:, :k].astype(np.float64) @ bmat.astype(np.float64)
    assert np.array_equal(mem.read("d").reshape(m, n), want.astype(np.float32))


ATTENTION_CASES = [
    ("f16", 64, True, 100, 64, 64, 128, 2),      # one warpgroup, ragged last key block
    ("bf16", 64, False, 200, 64, 64, 128, 1),
    ("f16", 128, False, 100, 64, 64, 128, 1),    # d128: Kᵀ k-steps 8, V n128 (two atoms)
    ("bf16", 128, True, 200, 64, 32, 128, 1),
    ("bf16", 64, True, 200, 128, 64, 256, 1),    # two warpgroups, the shipped block shape
]


@pytest.mark.parametrize("a", ["registers", "shared"])
@pytest.mark.parametrize("fmt,d,causal,n,block_m,block_n,work_items,bh", ATTENTION_CASES)
def test_attention_on_wgmma_matches_the_float64_oracle(tmp_path, ptxas, fmt, d, causal, n,
                                                      block_m, block_n, work_items, bh, a):
    """Q in registers (the default) and, --gpu-tile-wgmma-a=shared, in workgroup memory
    (both wgmma operands through descriptors; with two warpgroups each reads its rows)."""
    objects = compile_wgmma(
        tmp_path, ptxas, SOURCE.read_text(encoding="utf-8"),
        consts=(("HEAD_DIM", str(d)), ("ELEM", fmt), ("BLOCK_M", str(block_m)),
                ("BLOCK_N", str(block_n)), ("WORK_ITEMS", str(work_items))), a=a)
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


@pytest.mark.parametrize("fmt,causal,n", [("f16", True, 200), ("bf16", False, 150)])
def test_tiles_past_48_kib_live_in_dynamic_workgroup_memory(tmp_path, ptxas, fmt, causal, n):
    """d128 with 128 keys a step and Q in workgroup memory: 80 KiB of swizzled tiles, so
    they live in the dynamic arena at fixed offsets (1024-byte aligned), the signature asks
    launches for those bytes, and the kernel traps when a launch gives fewer."""
    src = SOURCE.read_text(encoding="utf-8")
    consts = (("HEAD_DIM", "128"), ("ELEM", fmt), ("BLOCK_N", "128"))
    objects, explain = compile_text(tmp_path, src, arch="sm_90a", consts=consts,
                                    tile_wgmma=True, tile_wgmma_a="shared")
    ptx, sig = compile_text.ptx, compile_text.signature
    ptxas(ptx, "sm_90a")
    assert "in dynamic workgroup memory (81920 bytes" in layout_remark(explain)
    (kernel,) = sig["kernels"]
    need = 64 * 128 * 2 + 2 * 128 * 128 * 2
    assert kernel["shared_bytes"] == need
    assert ".extern .shared .align 1024 .b8 attention_dyn[];" in ptx
    assert not re.search(r"^\s*\.shared\s", ptx, re.M)       # no static tile arrays
    assert "%dynamic_smem_size;" in ptx and f", {need};" in ptx and "trap;" in ptx
    check_attention(partial(run, dynamic=need), objects, fmt, n, 128, causal, 64, 128, 1)
    with pytest.raises(SimError, match="trap"):
        check_attention(partial(run, dynamic=need - 1024), objects, fmt, n, 128, causal, 64,
                        128, 1)


def test_a_kernels_own_dynamic_view_keeps_its_tiles_static(tmp_path):
    """A `workgroup var` view shares the dynamic arena's base, so such a kernel's tiles stay
    within 48 KiB: past it, no wgmma form, and `--explain` says why."""
    src = SOURCE.read_text(encoding="utf-8").replace(
        "    var neg_inf:", "    workgroup var scratch: float32*;\n    var neg_inf:")
    assert "workgroup var scratch" in src
    _, explain = compile_text(tmp_path, src, arch="sm_90a", tile_wgmma=True,
                              tile_wgmma_a="shared",
                              consts=(("HEAD_DIM", "128"), ("BLOCK_N", "128")))
    remark = layout_remark(explain)
    assert "tile values replay" in remark and "`workgroup var` view" in remark, remark
