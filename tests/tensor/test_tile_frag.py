"""Register-resident tiles (toolchain/compiler/frontend/tile_frag.py, the layout plan of
tile_plan.py) on the CPU PTX interpreter: the exact operations give the replay's bits,
the matmul is exact on small integers for both b layouts, aligned and misaligned sources
and ragged tails, and the attention example in the fragment form matches the float64
oracle; `--explain` says which form a kernel got and why."""
from __future__ import annotations

import numpy as np
import pytest

from examples.attention.attention import SOURCE, reference
from toolchain.compiler.driver import compile_file
from tests.support.gpu_opt_mode import options

from .frag_sim import run_frag
from .wgfrag_sim import run_wgfrag
from .test_tile_attention import TOL, from_bits, to_bits

SOFTMAX = """
kernel(block = 128) rows(x: float32*, y: float32*, r: float32*, h: uint16*, mxo: float32*,
                         n: uint32, m: uint32, c: float32, d: int32) {
    var row0: uint32 = block.x * 64;
    var t: tile<f32, 64, 32> = tile_load(x, row0, 0, n, m);
    t = tile_mask(t, row0, 0, n, m, fill: -7.5, upper: d, lower: -20);
    var mx: tile<f32, 64, 1> = tile_row_max(t);
    var p: tile<f32, 64, 32> = tile_exp2(tile_fma(t, c, -mx));
    var l: tile<f32, 64, 1> = tile_row_sum(p);
    // a constant operand that is not a zero: max.f32 alone (NaN rows, equal values)
    var k: tile<f32, 64, 32> = tile_max(t, -1.5) * 0.125 + tile_min(t, 2.5) * 0.0625;
    tile_store(y, p / l + tile_max(t, 0.0) * 0.25 - tile_min(t, mx) + k, row0, 0, n, m);
    tile_store(r, l, row0, 0, n, 1);
    tile_store(mxo, tile_row_max(tile_mask(t, row0, 0, n, m, fill: -1.0, lower: 0)), row0, 0,
               n, 1);
    tile_store(h, tile_convert(p, to: f16), row0, 0, n, m);
}
"""

MATMUL = """
kernel(block = 128) mm(a: uint16*, b: uint16*, c: float32*, d: float32*, m: uint32,
                       k: uint32, n: uint32, lda: uint32, ldb: uint32) {
    var row0: uint32 = block.x * 64;
    var ta: tile<f16, 64, 32> = tile_load(a, row0, 0, m, k, ld: lda);
    var tb: tile<f16, 32, 48> = tile_load(b, 0, 0, k, n, ld: ldb LAYOUT);
    var tc: tile<f32, 64, 48> = tile_load(c, row0, 0, m, n);
    tile_store(d, tensor_matmul(ta, tb, tc), row0, 0, m, n);
}
"""


def compile_text(tmp_path, text: str, arch="sm_80", consts=(), **opts):
    path = tmp_path / "k.mettle"
    path.write_text(text)
    o = options(emit="ptx", gpu_arch=arch, optimize=True, consts=tuple(consts),
                explain=True, **opts)
    res = compile_file(str(path), o)
    compile_text.ptx = res.data.decode()
    compile_text.signature = res.signature
    return res.objects, res.explain or ""


def layout_remark(explain: str) -> str:
    (line,) = [x for x in explain.splitlines() if "tile-layout" in x]
    return line


@pytest.mark.parametrize("upper", [5, -(1 << 31)])     # a diagonal; everything masked
def test_exact_operations_give_the_replays_bits(tmp_path, upper):
    n, m = 100, 29
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, (n, m)).astype(np.float32)
    x[3, :5] = [0.0, -0.0, 0.0, -0.0, 0.0]         # signed zeros through max/min
    x[7, :] = -0.0
    x[9, :] = -np.abs(x[9, :])
    # the stored row maxima see columns row..row+5 (masks upper: 5, then lower: 0)
    x[9, 10], x[9, 11] = -0.0, 0.0                # -0 then +0 in one lane: the max is +0
    x[10, :] = -np.abs(x[10, :])
    x[10, 13] = -0.0                              # max -0
    x[11, 12] = np.nan                            # maximumNumber ignores a NaN
    x[12, :] = np.nan
    x[13, :4] = [-1.5, 2.5, -1.5, 2.5]             # ties with the constants
    c = np.float32(1.4426950408889634 * 0.3)
    out = {}
    for form, opts in (("frag", {}), ("replay", {"tile_mma": False})):
        objects, explain = compile_text(tmp_path, SOFTMAX, **opts)
        remark = layout_remark(explain)
        assert ("registers" in remark) == (form == "frag"), remark
        mem = run_frag(objects, "rows", 128, [
            ("buf", "x", x.ravel()), ("buf", "y", np.zeros(n * m, np.float32)),
            ("buf", "r", np.zeros(n, np.float32)), ("buf", "h", np.zeros(n * m, np.uint16)),
            ("buf", "mxo", np.zeros(n, np.float32)),
            ("u32", n), ("u32", m), ("u32", int(c.view(np.uint32))),
            ("u32", upper & 0xFFFFFFFF)], grid=(-(-n // 64), 1, 1))
        out[form] = [mem.read(b).view(np.uint32 if b != "h" else np.uint16).copy()
                     for b in ("y", "r", "h", "mxo")]
    for got, want in zip(out["frag"], out["replay"]):
        assert np.array_equal(got, want)
    if upper != 5:
        return
    mx = out["frag"][3].view(np.float32)
    assert mx[9].view(np.uint32) == 0 and mx[10].view(np.uint32) == 0x80000000
    assert np.isfinite(mx[11])


@pytest.mark.parametrize("layout,m,k,n,lda,ldb", [
    ("row", 70, 32, 48, 32, 48),          # aligned: 16-byte copies
    ("row", 64, 27, 45, 27, 48),          # ragged k and n, aligned ld: partial copies
    ("row", 50, 32, 48, 33, 49),          # odd ld: element copies
    ("col", 64, 32, 48, 32, 32),          # b read column-major (Kᵀ): ldmatrix without .trans
    ("col", 90, 19, 41, 19, 21),          # ragged, misaligned
])
def test_matmul_of_a_register_tile_and_a_shared_tile_is_exact(tmp_path, layout, m, k, n,
                                                              lda, ldb):
    src = MATMUL.replace(" LAYOUT", ", layout: col" if layout == "col" else "")
    objects, explain = compile_text(tmp_path, src)
    assert "shared tiles (workgroup memory, ldmatrix): `tb`" in layout_remark(explain)
    check_matmul(run_frag, objects, layout, m, k, n, lda, ldb)


@pytest.mark.parametrize("layout,kb,nb,ptx,form", [
    ("col", 32, 48, None, "none"),         # the whole tile inside: no bound at all
    ("col", 24, 48, None, "ignore-src"),   # whole chunks, some outside: a per-thread test
    ("row", 32, 40, None, "ignore-src"),   # b's columns: 40 of 48, whole chunks
    ("row", 32, 45, None, "size"),         # a cut chunk: source sizes
    ("col", 24, 48, "7.4", "size"),        # no ignore-src before PTX ISA 7.5: size 0 or 16
])
def test_constant_bounds_copy_whole_chunks_by_predicate(tmp_path, layout, kb, nb, ptx, form):
    src = MATMUL.replace(" LAYOUT", ", layout: col" if layout == "col" else "")
    src = "const KB = 1;\nconst NB = 1;\n" + src.replace(
        "tile_load(b, 0, 0, k, n,", "tile_load(b, 0, 0, KB, NB,")
    objects, _ = compile_text(tmp_path, src, consts=(("KB", str(kb)), ("NB", str(nb))),
                              **({"ptx_version": ptx} if ptx else {}))
    copies = [x for x in compile_text.ptx.splitlines() if "cp.async.cg.shared.global" in x]
    last = {"ignore-src": "%p", "size": "%r", "none": "16"}[form]
    assert copies and all(x.rstrip(";").split(",")[-1].strip().startswith(last)
                          for x in copies), copies
    check_matmul(run_frag, objects, layout, 70, kb, nb, 33 if layout == "row" else 32,
                 48 if layout == "row" else 32)


WHOLE_ROWS = """
kernel(block = 128) mm(a: uint16*, b: uint16*, c: float32*, d: float32*, k: uint32) {
    var ta: tile<f16, 64, 32> = tile_load(a, 0, 0, 64, 32);
    var tb: tile<f16, 32, 64> = tile_load(b, 0, 0, k, 64);
    var tc: tile<f32, 64, 64> = tile_load(c, 0, 0, 64, 64);
    tile_store(d, tensor_matmul(ta, tb, tc), 0, 0, 64, 64);
}
"""


@pytest.mark.parametrize("k", [32, 20, 0])
@pytest.mark.parametrize("form", ["frag", "wgmma"])
def test_a_tile_wholly_inside_copies_without_bounds_and_a_partial_one_zero_fills(
        tmp_path, form, k):
    """b's rows past k are NaN in memory and a's columns past k are not zero: the rows of
    tb past k must be zero-filled (the bounded copies), and with k = 32 every row is
    inside, which takes the copies without a bound (one uniform test). Reading a row past
    k puts a NaN in d."""
    arch, opts, run = ("sm_80", {}, run_frag) if form == "frag" else \
        ("sm_90a", {"tile_wgmma": True}, run_wgfrag)
    objects, _ = compile_text(tmp_path, WHOLE_ROWS, arch=arch, **opts)
    assert any(x.rstrip(";").endswith(", 16, 16") for x in compile_text.ptx.splitlines()
               if "cp.async.cg.shared.global" in x)
    rng = np.random.default_rng(k)
    a = rng.integers(1, 4, (64, 32)).astype(np.float16)
    bmat = rng.integers(-3, 4, (32, 64)).astype(np.float16)
    bmem = bmat.copy()
    bmem[k:] = np.nan
    c = rng.integers(-20, 20, (64, 64)).astype(np.float32)
    mem = run(objects, "mm", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", bmem.view(np.uint16).ravel()),
        ("buf", "c", c.ravel()), ("buf", "d", np.zeros(64 * 64, np.float32)), ("u32", k)])
    want = c + a[:, :k].astype(np.float32) @ bmat[:k].astype(np.float32)
    np.testing.assert_array_equal(mem.read("d").reshape(64, 64), want)


def check_matmul(run, objects, layout: str, m: int, k: int, n: int, lda: int, ldb: int,
                 seed: int = 0) -> None:
    """`mm` of MATMUL run by `run` (run_frag's signature) on small integers (exact)."""
    rng = np.random.default_rng(m + k + n + seed)
    a = rng.integers(-3, 4, (m, lda)).astype(np.float16)
    bmat = rng.integers(-3, 4, (k, n)).astype(np.float16)
    if layout == "row":
        bmem = np.zeros((k, ldb), np.float16)
        bmem[:, :n] = bmat
    else:
        bmem = np.zeros((n, ldb), np.float16)
        bmem[:, :k] = bmat.T
    c = rng.integers(-20, 20, (m, n)).astype(np.float32)
    mem = run(objects, "mm", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", bmem.view(np.uint16).ravel()),
        ("buf", "c", c.ravel()), ("buf", "d", np.zeros(m * n, np.float32)),
        ("u32", m), ("u32", k), ("u32", n), ("u32", lda), ("u32", ldb)],
        grid=(-(-m // 64), 1, 1))
    want = a[:, :k].astype(np.float64) @ bmat.astype(np.float64) + c
    assert np.array_equal(mem.read("d").reshape(m, n), want.astype(np.float32))


@pytest.mark.parametrize("fmt,n,causal,d,block_m,block_n,work_items", [
    ("f16", 70, True, 16, 64, 16, 128),       # one slab per subgroup, five key blocks
    ("bf16", 100, False, 32, 128, 32, 128),   # two slabs per subgroup, ragged last block
    ("bf16", 100, False, 128, 128, 64, 256),  # the shipped d128 variant as it is
])
def test_attention_example_in_registers_matches_the_float64_oracle(tmp_path, fmt, n, causal,
                                                                  d, block_m, block_n,
                                                                  work_items):
    objects, explain = compile_attention(tmp_path, fmt, d, block_m, block_n, work_items)
    assert "registers in the mma fragment layout" in layout_remark(explain)
    check_attention(run_frag, objects, fmt, n, d, causal, block_m, work_items,
                    2 if work_items == 128 else 1)


def compile_attention(tmp_path, fmt, d, block_m, block_n, work_items, **opts):
    """The example with `work_items` per workgroup and the given constants."""
    return compile_text(
        tmp_path, SOURCE.read_text(encoding="utf-8"),
        consts=(("HEAD_DIM", str(d)), ("ELEM", fmt), ("BLOCK_M", str(block_m)),
                ("BLOCK_N", str(block_n)), ("WORK_ITEMS", str(work_items))), **opts)


def check_attention(run, objects, fmt: str, n: int, d: int, causal: bool, block_m: int,
                    work_items: int, bh: int, lead: int = 0):
    """The attention example run by `run` (run_frag's signature) against the float64
    oracle, within TOL; returns the output's bits. `lead`: the first `lead` keys are 4x
    larger, so most rows' maxima are settled by the first key block and later blocks
    rescale by exactly 1."""
    rng = np.random.default_rng(n + d)
    qf, kf, vf = (rng.uniform(-1, 1, (bh, n, d)) for _ in range(3))
    kf[:, :lead] *= 4
    q, k, v = (to_bits(x, fmt) for x in (qf, kf, vf))
    scale = d ** -0.5
    mem = run(objects, "attention", work_items, [
        ("buf", "q", q.ravel()), ("buf", "k", k.ravel()), ("buf", "v", v.ravel()),
        ("buf", "o", np.zeros(bh * n * d, np.uint16)), ("u32", n),
        ("u32", int(np.float32(scale).view(np.uint32))), ("u32", int(causal))],
        grid=(-(-n // block_m), bh, 1))
    got = from_bits(mem.read("o").reshape(bh, n, d), fmt)
    want = reference(from_bits(q, fmt), from_bits(k, fmt), from_bits(v, fmt), causal, scale)
    assert np.abs(got - want).max() <= TOL[fmt], np.abs(got - want).max()
    return mem.read("o")


@pytest.mark.parametrize("change,why", [
    ("var cs: tile<f32, 1, 32> = tile_col_sum(t);", "`tile_col_sum` has no fragment form"),
    ("var t2: tile<f32, 32, 32> = tile_fill(0.0);", "`t2` has 32 rows"),
])
def test_explain_says_why_a_kernel_replays(tmp_path, change, why):
    src = SOFTMAX.replace("    var mx:", f"    {change}\n    var mx:")
    _, explain = compile_text(tmp_path, src)
    remark = layout_remark(explain)
    assert "tile values replay (distributed layout)" in remark and why in remark


def test_targets_without_the_warp_mma_replay(tmp_path):
    _, explain = compile_text(tmp_path, SOFTMAX, arch="sm_75")
    assert "no m16n8k16 warp MMA" in layout_remark(explain)


TWO_LOADS = """
kernel(block = 128) two(a: uint16*, b: uint16*, c: uint16*, d: float32*, m: uint32,
                        k: uint32) {
    var row0: uint32 = block.x * 64;
    var ta: tile<f16, 64, 32> = tile_load(a, row0, 0, m, k);
    var t1: tile<f16, 32, 32> = tile_load(b, 0, 0, k, 32);
    var t2: tile<f16, 32, 32> = tile_load(c, 0, 0, k, 32, layout: col);
    var x: tile<f32, 64, 32> = tensor_matmul(ta, t1);
    var y: tile<f32, 64, 32> = tensor_matmul(tile_convert(x, to: f16), t2, x);
    tile_store(d, y, row0, 0, m, 32);
}
"""


def test_back_to_back_shared_loads_are_complete_at_their_matmuls(tmp_path):
    """Two loads, then their matmuls (the interpreter completes a copy only at the wait
    that covers it): the second load follows the first with no barrier of its own (the
    first read no shared tile), so both copies are in flight at once; t1's matmul waits
    for all but t2's group, t2's matmul for t2."""
    objects, _ = compile_text(tmp_path, TWO_LOADS)
    text = compile_text.ptx
    check_two_loads(run_frag, objects)
    # the first load, t2's matmul, the return; t1's matmul leaves t2's group in flight
    assert text.count("cp.async.wait_group 0;") == 3
    assert text.count("cp.async.wait_group 1;") == 1
    assert text.count("bar.sync") == 3


def check_two_loads(run, objects) -> None:
    """`two` of TWO_LOADS run by `run` (run_frag's signature) on small integers (exact)."""
    m, k = 70, 32
    rng = np.random.default_rng(3)
    a = rng.integers(-2, 3, (m, k)).astype(np.float16)
    b1 = rng.integers(-2, 3, (k, 32)).astype(np.float16)
    c = rng.integers(-2, 3, (32, k)).astype(np.float16)        # t2 = c read column-major
    mem = run(objects, "two", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", b1.view(np.uint16).ravel()),
        ("buf", "c", c.view(np.uint16).ravel()), ("buf", "d", np.zeros(m * 32, np.float32)),
        ("u32", m), ("u32", k)], grid=(-(-m // 64), 1, 1))
    x = a.astype(np.float64) @ b1.astype(np.float64)
    want = x @ c.T.astype(np.float64) + x
    assert np.array_equal(mem.read("d").reshape(m, 32), want.astype(np.float32))


FROM_WORKGROUP = """
kernel(block = 128) wg(a: uint16*, b: uint16*, d: float32*, m: uint32) {
    workgroup var stage: uint16[1024];
    var i: uint32 = thread.x;
    while (i < 1024) { stage[i] = b[i]; i = i + 128; }
    barrier();
    var row0: uint32 = block.x * 64;
    var ta: tile<f16, 64, 32> = tile_load(a, row0, 0, m, 32);
    var tb: tile<f16, 32, 32> = tile_load(&stage[0], 0, 0, 32, 32);
    tile_store(d, tensor_matmul(ta, tb), row0, 0, m, 32);
}
"""


def test_a_shared_tile_loaded_from_workgroup_memory_is_copied_element_by_element(tmp_path):
    objects, explain = compile_text(tmp_path, FROM_WORKGROUP)
    assert "`tb`" in layout_remark(explain)
    assert "cp.async.cg" not in compile_text.ptx        # cp.async reads global memory only
    check_from_workgroup(run_frag, objects)


def check_from_workgroup(run, objects) -> None:
    """`wg` of FROM_WORKGROUP run by `run` (run_frag's signature): exact."""
    m = 64
    rng = np.random.default_rng(8)
    a = rng.integers(-3, 4, (m, 32)).astype(np.float16)
    bm = rng.integers(-3, 4, (32, 32)).astype(np.float16)
    mem = run(objects, "wg", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", bm.view(np.uint16).ravel()),
        ("buf", "d", np.zeros(m * 32, np.float32)), ("u32", m)])
    want = a.astype(np.float64) @ bm.astype(np.float64)
    assert np.array_equal(mem.read("d").reshape(m, 32), want.astype(np.float32))



SEQUENCE = """
kernel(block = 128) seq(x: float32*, y: float32*, n: uint32) {
    var row0: uint32 = block.x * 64;
    var a: tile<f32, 64, 256> = tile_load(x, row0, 0, n, 256);
    tile_store(y, a * 2.0, row0, 0, n, 256);
    var b: tile<f32, 64, 256> = tile_load(x, row0, 0, n, 256);
    tile_store(y, b + 1.0, row0, 0, n, 256);
    var c: tile<f32, 64, 256> = tile_load(x, row0, 0, n, 256);
    tile_store(y, c - 3.0, row0, 0, n, 256);
}
"""

LOOP = """
kernel(block = 128) carried(x: float32*, y: float32*, n: uint32) {
    var row0: uint32 = block.x * 64;
    var a: tile<f32, 64, 256> = tile_load(x, row0, 0, n, 256);
    var i: uint32 = 0;
    while (i < 2) {
        tile_store(y, a * 2.0, row0, 0, n, 256);
        var b: tile<f32, 64, 256> = tile_load(x, row0, 0, n, 256);
        tile_store(y, b + 1.0, row0, 0, n, 256);
        i = i + 1;
    }
}
"""


def test_the_register_estimate_counts_the_tiles_live_at_once(tmp_path):
    """Three 128-register tiles one after another fit the 255-register budget: each is dead
    before the next is loaded. In a loop, `a` (loaded before it, read at its top) holds
    its registers through the whole body, since the next iteration reads it again, so it
    is live together with the body's `b`: 256 registers, over the budget."""
    _, explain = compile_text(tmp_path, SEQUENCE)
    assert "held in registers" in layout_remark(explain), explain
    _, explain = compile_text(tmp_path, LOOP)
    remark = layout_remark(explain)
    assert "live at once need about 256 registers" in remark, remark


UNREAD_PREFETCH = """
kernel(block = 128) pre(a: uint16*, b: uint16*, d: float32*, n: uint32) {
    var row0: uint32 = block.x * 64;
    var ta: tile<f16, 64, 16> = tile_load(a, row0, 0, n, 16);
    var tb: tile<f16, 16, 32> = tile_load(b, 0, 0, 64, 32);
    var acc: tile<f32, 64, 32> = tensor_matmul(ta, tb);
    var i: uint32 = 0;
    while (i < 3) {
        acc = acc * 0.5;
        tb = tile_load(b, (i + 1) * 16, 0, 64, 32);
        i = i + 1;
    }
    tile_store(d, tensor_matmul(ta, tb, acc), row0, 0, n, 32);
}
"""


def test_a_load_the_loop_never_reads_is_waited_for_at_the_back_edge(tmp_path):
    """The loop enters with no copy group in flight (the matmul waited) and would come
    back with one (the load it never reads): the lowering waits for it at the end of the
    body, so the paths agree (the async-group verifier once refused this program), and
    the result is the one the loads say."""
    objects, explain = compile_text(tmp_path, UNREAD_PREFETCH)
    assert "held in registers" in layout_remark(explain)
    ptx = compile_text.ptx
    commit = ptx.index("cp.async.commit_group", ptx.index("mma.sync"))    # the reload's
    latch = ptx[commit:ptx.index("bra", commit)]
    assert "cp.async.wait_group 0;" in latch, latch
    rng = np.random.default_rng(3)
    n = 70
    a = rng.integers(-3, 4, (n, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 32)).astype(np.float16)
    mem = run_frag(objects, "pre", 128, [
        ("buf", "a", a.view(np.uint16).ravel()), ("buf", "b", b.view(np.uint16).ravel()),
        ("buf", "d", np.full(n * 32, np.nan, np.float32)), ("u32", n)], grid=(2, 1, 1))
    first = a.astype(np.float64) @ b[:16].astype(np.float64)
    want = first * 0.125 + a.astype(np.float64) @ b[48:].astype(np.float64)
    assert np.array_equal(mem.read("d").reshape(n, 32), want.astype(np.float32))
