"""The fused epilogue of tensor_matmul (docs/reference/gemm.md "Fused epilogue"): the options, their
diagnostics and the IR; on sm_90a the arithmetic on the wgmma accumulator registers (no
memory pass, ptxas: no spills at the 168-register cap, every epilogue and D format); on
the other profiles the split regions, run on the CPU PTX interpreter against a float32
numpy oracle bit for bit on M/N/K tails with poisoned padding (f32 results: region then
memory pass; f16/bf16: exact replay with the epilogue before the rounding; subgroup
regions too); the same instruction sequence per element on both paths (SPIR-V refuses:
tests/spirv_emit/test_tensor_refusals.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.support import tensor_oracle as O
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir.printer import format_module
from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.targets.ptx import ops
from toolchain.compiler.targets.ptx.tensor import wgmma

from . import narrow_cases as NC
from .kernels import compile_ptx
from .ptx_sim import Sim, f32_bits
from .wgmma_sim import PipelineSim
from .test_defaults import LAYOUTS, operands, ptx_of
from bench.wgmma_kernels import EPILOGUES, epilogue_oracle, epilogue_options, epilogue_params, \
    gemm_source, native_launch

ALPHA, BETA, LO, HI = 0.3, -1.5, -20.0, 30.0        # 0.3: inexact, so rounding is seen


def _native(text: str) -> str:
    """The sm_90a consumer's epilogue: from its last wgmma wait to its register release."""
    start = text.index("wgmma.wait_group.sync.aligned 0")
    return text[start:text.index("setmaxnreg.dec.sync.aligned.u32 168", start)]


# ---------------------------------------------------------------- language surface
def test_options_become_the_epilogue_attribute_and_read_back():
    src = gemm_source("f16", epilogue="matrix_bias_col")
    module, _ = compile_to_ir("g.mettle", gpu=True, source_text=src)
    text = format_module(module)
    line = next(x for x in text.splitlines() if "tensor.matmul" in x)
    assert "epilogue=<m128n256 f32 row ld=None bias=matrix/col ldbias=None clamp " \
           "workgroup>" in line, line
    assert line.rstrip("}").endswith("bias, alpha, beta, clamp_min, clamp_max, ldbias)")
    again = parse_module(text)
    assert _matmul(again).attrs["epilogue"] == _matmul(module).attrs["epilogue"]


def _matmul(module):
    return next(i for f in module.functions.values() for i in f.instructions()
                if i.op == "tensor.matmul")


BAD = [
    ("bias_mode: column, activation: relu", "E0342",
     "`bias:` and a `bias_mode` other than none go together"),
    ("bias: bias, activation: relu", "E0342", "`bias:` and a `bias_mode`"),
    ("activation: clamp, clamp_min: lo", "E0342", "needs `clamp_min:` and `clamp_max:`"),
    ("clamp_min: lo, clamp_max: hi", "E0342", "need `activation: clamp`"),
    ("alpha: 2", "E0342", None),                                  # a literal adopts f32
    ("alpha: ldbias", "E0342", "`alpha:` must be a float32"),
    ("bias_mode: column, bias: a", "E0343", "`bias:` must be a float32*"),
    ("bias_mode: matrix, bias: bias", "E0342", "needs an explicit `ldbias:`"),
    ("bias_mode: row, bias: bias, ldbias: ldbias", "E0342", "needs `bias_mode: matrix`"),
    ("bias_mode: row, bias: bias, bias_layout: col", "E0342", "needs `bias_mode: matrix`"),
    ("activation: gelu", "E0342", "`activation:` must be one of identity, relu, clamp"),
    ("element_type: f32", "E0340", "unknown option `element_type:`"),
]


@pytest.mark.parametrize("opts,code,message", BAD)
def test_misuse_is_a_located_diagnostic(opts, code, message):
    src = gemm_source("f16", epilogue="relu").replace("activation: relu", opts)
    if message is None:                          # the accepted control case
        compile_ptx(src, "sm_121a")
        return
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_121a")
    d = exc.value.diagnostics[0]
    assert d.code == code and message in d.message and d.span is not None, d


def test_a_varying_epilogue_operand_is_refused():
    src = gemm_source("f16", epilogue="scale_clamp").replace(
        "alpha: alpha", "alpha: (float32)thread.x")
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_121a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0414" and "`alpha`" in d.message and d.span is not None


def test_integer_result_and_tensor_mma_refuse_epilogue_options():
    src = gemm_source("f16", epilogue="relu").replace("input_type: f16", "input_type: i8") \
        .replace("a: uint16*, b: uint16*", "a: int8*, b: int8*") \
        .replace("c: float32*, d: float32*", "c: int32*, d: int32*") \
        .replace("output_type: f32", "output_type: i32")
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_121a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0342" and "floating-point result" in d.message and d.span
    mma = """kernel k(a: uint16*, b: uint16*, c: float32*, d: float32*) {
  tensor_mma(a, b, c, d, shape: m16n16k16, input_type: f16, output_type: f32,
             activation: relu);
}
"""
    with pytest.raises(CompileError) as exc:
        compile_ptx(mma, "sm_121a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0340" and "separate tensor_epilogue" in d.message and d.span


# ---------------------------------------------------------------- sm_90a pipeline
def test_native_epilogue_on_accumulator_registers():
    """alpha, beta*bias (matrix, column-major, runtime ldbias), clamp: each pair adds C,
    then mul.rn / add.rn / setp+selp on the accumulator registers and one store; the
    bias is loaded with C before the batch's stores, under the columns' predicates;
    no memory pass (no D load) in the pipeline."""
    text = compile_ptx(gemm_source("f16", epilogue="matrix_bias_col"), "sm_90a")
    epilogue = _native(text)
    at = re.search(r"^\$L__wg_epi_direct\d+:", epilogue, re.M).start()
    boxes, native = epilogue[:at], epilogue[at:]      # the copy engine's way, the registers'
    # through the copy engine: the same loads and arithmetic, the pair into a box
    assert boxes.count("ld.global.v2.f32") == boxes.count("st.shared.v2.f32") == 64
    assert "st.global" not in boxes and "$L__trp_e" not in boxes
    assert boxes.count("mul.rn.f32") == native.count("mul.rn.f32") > 0
    pair = re.search(
        r"@(%p\d+) ld\.global\.v2\.f32 \{(%f\d+), %f\d+\}, \[%rd\d+\];.*?"
        r"or\.pred (%p\d+), \1, %p\d+;\s+mov\.f32 (%f\d+), 0f00000000;\s+"
        r"@\3 ld\.global\.f32 \4, \[%rd\d+\];.*?"
        r"@\1 ld\.global\.f32 %f\d+, \[%rd\d+\];.*?"
        r"add\.f32 (%f\d+), \5, \2;.*?"
        r"mul\.rn\.f32 (%f\d+), %f\d+, \4;.*?"
        r"mul\.rn\.f32 \5, %f\d+, \5;\s+add\.rn\.f32 \5, \5, \6;\s+"
        r"setp\.lt\.f32 (%p\d+), \5, %f\d+;\s+selp\.f32 \5, %f\d+, \5, \7;\s+"
        r"setp\.gt\.f32 (%p\d+), \5, %f\d+;\s+selp\.f32 \5, %f\d+, \5, \8;.*?"
        r"st\.global\.v2\.f32 \[%rd\d+\], \{\5, ", native, re.S)
    assert pair, native[:4000]
    assert "$L__trp_e" not in native and native.count("ld.global.v2.f32") == 64
    assert native.count("st.global.v2.f32") == 64            # one store per pair: 2 x 32
    head = native[:native.index("st.global.v2.f32")]
    assert head.count("ld.global.v2.f32") == wgmma.FUSED_BATCH["matrix"]


@pytest.mark.parametrize("epilogue", list(EPILOGUES))
@pytest.mark.parametrize("fmt,out,bn", [("f16", "f32", 256), ("f16", "f16", 256),
                                        ("bf16", "bf16", 256), ("bf16", "f32", 128)])
def test_native_resources_no_spills(ptxas_path, epilogue, fmt, out, bn):
    from .test_wgmma import assert_entry_cap
    text = compile_ptx(gemm_source(fmt, bn=bn, out=out, epilogue=epilogue), "sm_90a")
    assert "wgmma.mma_async" in text and "mul.rn.f32" in text or "alpha" not in \
        EPILOGUES[epilogue]
    assert_entry_cap(ptxas_path, text)


def _element_ops(text: str, anchor: str) -> list[str]:
    """The opcodes applied after `anchor` (the pipeline's C adds of a pair, the memory
    pass's D load of one element) up to the store, register names dropped."""
    i = text.index(anchor)
    out = []
    for line in text[i:].splitlines()[1:]:
        op = line.strip().split(" ")[0]
        if op.startswith(("st.", "@")) or op.startswith("cvt.rn"):
            break
        if op.startswith(("mul.rn", "add.rn", "setp.lt.f32", "setp.gt.f32", "selp.f32")):
            out.append(op)
    return out


@pytest.mark.parametrize("epilogue", ["scale_clamp", "relu"])
def test_native_and_split_paths_apply_the_same_instructions(epilogue):
    """Bitwise agreement by construction: after the f32 value of an element exists (the
    pipeline's C add, the split memory pass's D load), both paths apply the same
    instructions in the same order (mul.rn/add.rn: no contraction into an FMA)."""
    text = compile_ptx(gemm_source("f16", epilogue=epilogue), "sm_90a")
    native = _native(text)
    split = text[text.index("setmaxnreg.dec.sync.aligned.u32 168"):]
    loads = [m.start() for m in re.finditer(r"ld\.global\.f32", split)]
    one = next(ops for i in loads if (ops := _element_ops(split[i:], "ld.global.f32")))
    assert one and _element_ops(native, "add.f32") == one * 2      # a pair: x, then y


@pytest.mark.parametrize("arch", ["sm_121a", "sm_90", "portable"])
@pytest.mark.parametrize("out", ["f32", "f16"])
def test_other_profiles_split_and_assemble(ptxas, arch, out):
    text = compile_ptx(gemm_source("f16", out=out, epilogue="col_bias_relu"), arch)
    assert "wgmma" not in text and "setmaxnreg" not in text and "mul.rn.f32" in text
    ptxas(text, {"portable": "sm_75"}.get(arch, arch))


# ---------------------------------------------------------------- CPU interpreter
def _source(out: str, epilogue: str, scope: str) -> str:
    dty = "float32" if out == "f32" else "uint16"
    types = "output_type: f32" if out == "f32" else \
        f"accumulator_type: f32, result_type: {out}"
    return f"""\
kernel mm(a: uint16*, b: uint16*, c: float32*, d: {dty}*, m: uint32, n: uint32,
          k: uint32, lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32{
              epilogue_params(dty, epilogue)}) {{
  tensor_matmul(a, b, c, d, block.y * 64, block.x * 32, m, n, k, shape: m64n32k16,
                input_type: f16, {types}, scope: {scope},
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd{epilogue_options(epilogue)});
}}
"""


def _bias(rng, epilogue: str, out: str, M: int, N: int):
    """(logical float32 bias, stored buffer, ldbias) for the epilogue's bias mode."""
    opts = EPILOGUES[epilogue]
    mode = re.search(r"bias_mode: (\w+)", opts)
    fmt = out
    if mode is None:
        return None, np.zeros(4, NC.CARRIER[fmt]), 1
    shape = {"row": (M,), "column": (N,), "matrix": (M, N)}[mode.group(1)]
    vals = (rng.integers(-40, 40, shape) / 4).astype(np.float32)
    if mode.group(1) != "matrix":
        return vals, NC.encode(fmt, vals), 1
    layout = "col" if "bias_layout: col" in opts else "row"
    buf, ld = NC.stored(fmt, vals, layout, False, 3)
    return vals, buf, ld


def _round(out: str, t: np.ndarray) -> np.ndarray:
    if out == "f16":
        return t.astype(np.float16).view(np.uint16)
    if out == "bf16":
        return O.to_bf16_bits(t)
    return t.view(np.uint32)


CASES = [("workgroup", "f32", e) for e in EPILOGUES] + \
    [("workgroup", "f16", e) for e in ("scale_clamp", "col_bias_relu", "matrix_bias_col")] + \
    [("workgroup", "bf16", e) for e in ("row_bias", "matrix_bias")] + \
    [("subgroup", "f32", e) for e in ("scale_clamp", "matrix_bias_col")]


@pytest.mark.parametrize("scope,out,epilogue", CASES)
def test_split_regions_exact_against_the_oracle(scope, out, epilogue):
    """M, N, K = 40, 40, 5: two 64x32 regions (one per workgroup, split into two 32x32
    subgroup regions, or one per subgroup), with M and N tails; the sums are exact (small integers), so the epilogue's f32 steps and
    D's one rounding must match the oracle bit for bit; D's padding stays poisoned."""
    M, N, K = 40, 40, 5
    rng = np.random.default_rng(hash((scope, out, epilogue)) % 2**32)
    bufs, lds, sums = operands("f16", M, N, K, seed=int(rng.integers(1 << 30)))
    bias, bbuf, ldbias = _bias(rng, epilogue, out, M, N)
    want = _round(out, epilogue_oracle(epilogue, sums.astype(np.float32), bias, ALPHA,
                                       BETA, LO, HI))
    if out != "f32":
        bufs["d"] = np.full(bufs["d"].size, NC.POISON["uint16"], np.uint16)
    poison = bufs["d"].copy()
    ptx = ptx_of(_source(out, epilogue, scope), "sm_121a", budget=1)   # replay (no WMMA
    warps = 2 if scope == "workgroup" else 1                           # in the interpreter)
    args = [("buf", w, bufs[w]) for w in "abcd"] + [("u32", v) for v in (M, N, K, *lds)]
    args += [("buf", "bias", bbuf), ("u32", ldbias)] + \
        [("u32", f32_bits(v)) for v in (ALPHA, BETA, LO, HI)]
    mem = Sim(ptx, "mm").run((2, 1), 32 * warps, args)
    got = mem.read("d")
    raw = got.view(np.uint32) if out == "f32" else got
    np.testing.assert_array_equal(O.logical(raw, M, N, LAYOUTS[3], lds[3]), want)
    r, c = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    untouched = np.ones(got.size, bool)
    untouched[O.index(LAYOUTS[3], lds[3], r, c)] = False
    np.testing.assert_array_equal(got[untouched], poison[untouched])


# ---------------------------------------------------------------- the pipeline's epilogue
def _fake_native(em, g, tid, end, share=None, fused=None, tiles=None):
    """The sm_90a region with its copy engine and wgmma main loop replaced (the CPU
    interpreter has neither): each consumer's accumulator register holds 3*row + column of
    the element it stands for, placed by the wgmma m64nNk16 f32 layout written out here
    (lane l of warp w of consumer warpgroup q: rows 64(q-1) + 16w + l/4 (+8), columns
    8j + 2(l%4) (+1); register 4j + 2*half + e), then the real epilogue runs. With
    `tiles` (persistent), inside the consumers' real tile loop (wgmma._tile_loop)."""
    wg, lane, warp, wtid = fake_consumer(em, tid, end)
    g, close = wgmma._tile_loop(em, g, tiles, "fake")
    wgmma._epilogue(em, g, wtid, wg, fake_accumulators(em, g, wg, lane, warp), fused)
    close()
    em.put(ops.bra(end, uniform=True))


def _fake_native_store(em, g, tid, end, share=None, fused=None, tiles=None):
    """_fake_native with D through the copy engine (wgmma.store_epilogue): thread 0 builds
    D's tensor map (wgmma.d_map) before a workgroup barrier, the store boxes sit at the
    start of the dynamic shared memory (1024-aligned), each warp's lane 0 waits for its
    stores before the end."""
    from toolchain.compiler.targets.ptx.tensor import tma
    mod = em.module
    dyn = mod._fresh(f"{em.fn.name}_fake_boxes")
    mod.shared_out.append(f".extern .shared .align 1024 .b8 {dyn}[];")
    ws_d, base, p = tma.workspace(em, 1), em.new("r"), em.new("p")
    ok = wgmma._store_pred(em, g)
    built = wgmma.label(em, "fake_dmap")
    em.put(ops.setp("ne", "u32", p, tid, 0), ops.bra(built, guard=p))
    wgmma.d_map(em, g, ws_d, ok)
    em.put(ops.label(built), ops.bar_sync(0), ops.mov("u32", base, dyn),
           ops.binary("add", "u32", base, base, 1023), ops.binary("and", "b32", base, base, -1024))
    wg, lane, warp, wtid = fake_consumer(em, tid, end)
    store = wgmma.Store.open(em, g, tid, (ws_d, base, 0, ok))
    g, close = wgmma._tile_loop(em, g, tiles, "fake")
    wgmma._epilogue(em, g, wtid, wg, fake_accumulators(em, g, wg, lane, warp), fused,
                    store=store)
    close()
    wgmma.Store.close(em, store)
    em.put(ops.bra(end, uniform=True))


def fake_consumer(em, tid, end):
    """Send the producer warpgroup to `end`; a consumer's (warpgroup, lane, warp in the
    warpgroup, thread in the warpgroup) registers."""
    wg, lane, warp, wtid = (em.new("r") for _ in range(4))
    p = em.new("p")
    em.put(ops.binary("shr", "u32", wg, tid, 7), ops.setp("eq", "u32", p, wg, 0),
           ops.bra(end, guard=p, uniform=True),           # the producer has no work
           ops.binary("and", "b32", wtid, tid, 127), ops.binary("and", "b32", lane, wtid, 31),
           ops.binary("shr", "u32", warp, wtid, 5))
    return wg, lane, warp, wtid


def fake_accumulators(em, g, wg, lane, warp) -> list[str]:
    """Accumulator registers holding 3*row + column of the element each stands for, by the
    wgmma m64nN f32 layout (see _fake_native)."""
    acc = []
    for j in range(g.desc.n // 8):
        for half in (0, 1):
            for e in (0, 1):
                r, c, t, f = em.new("r"), em.new("r"), em.new("r"), em.new("f")
                em.put(ops.binary("sub", "u32", r, wg, 1),
                       ops.mad("lo", "u32", r, r, 4, warp),                # 64(q-1) + 16w
                       ops.binary("shl", "b32", r, r, 4), ops.binary("shr", "u32", t, lane, 2),
                       ops.binary("add", "u32", r, r, t),
                       ops.binary("add", "u32", r, r, 8 * half),
                       ops.binary("add", "u32", r, r, g.row),
                       ops.binary("and", "b32", c, lane, 3),
                       ops.mad("lo", "u32", c, c, 2, 8 * j + e),
                       ops.binary("add", "u32", c, c, g.col),
                       ops.mad("lo", "u32", t, r, 3, c), ops.cvt("f32", "u32", f, t, "rn"))
                acc.append(f)
    return acc


def always(threads: int):
    """A stand-in for `native_pred`: true when the block has `threads` threads."""
    def pred(em, g, ntid):
        p = em.new("p")
        em.put(ops.setp("eq", "u32", p, ntid, threads(g.desc)))
        return p
    return pred


_always = always(wgmma.threads)


@pytest.mark.parametrize("out,epilogue,persistent", [
    ("f32", "matrix_bias_col", False), ("f16", "row_bias", False),
    ("bf16", "col_bias_relu", False), ("f32", "matrix_bias", False),
    ("f16", "scale_clamp", False), ("f32", "matrix_bias", True), ("bf16", "row_bias", True)])
def test_pipeline_epilogue_exact_on_the_interpreter(monkeypatch, out, epilogue, persistent):
    """The sm_90a epilogue itself (C and bias addressing through the accumulator mapping,
    batches, M/N predicates, the arithmetic, the rounded pair stores) on the CPU
    interpreter, its main loop replaced by known accumulators (_fake_native): m128n64
    regions over M x N = 150 x 70 (row and column tails), against the oracle bit for bit;
    D's padding stays poisoned."""
    fake_pipeline_exact(monkeypatch, _fake_native, out, epilogue, persistent)


@pytest.mark.parametrize("out,epilogue,persistent", [
    ("f32", "matrix_bias_col", True), ("f16", "row_bias", False), ("bf16", "col_bias_relu", True),
    ("f16", "matrix_bias", True), ("f32", "scale_clamp", False)])
def test_store_epilogue_exact_on_the_interpreter(monkeypatch, out, epilogue, persistent):
    """The same fused epilogues with D through the copy engine (16-byte aligned pitch,
    N = 72: whole 16-byte units): rows past M read no C and no bias (their predicates, no
    branch), boxes clipped by the copy engine; bit for bit, padding untouched."""
    monkeypatch.setattr(wgmma, "TMA_STORE", True)
    fake_pipeline_exact(monkeypatch, _fake_native_store, out, epilogue, persistent, N=72,
                        ldd=80, sim=PipelineSim)


def fake_pipeline_exact(monkeypatch, fake, out, epilogue, persistent, schedule=None,
                        N: int = 70, ldd: int | None = None, sim=None) -> None:
    """`fake` (a stand-in for wgmma.lower_native: the real epilogue on known
    accumulators) over M x N = 150 x N in m128n64 regions, against the oracle bit for
    bit, D's padding untouched; `epilogue` may be None. An odd N leaves the second
    column of the last pair outside (even pitches still: the pipeline's rule). `ldd`:
    D's pitch (default: even, not 16-byte aligned); `sim`: PipelineSim for a fake with
    shared memory and the copy engine (given the pipeline's shared_bytes)."""
    monkeypatch.setattr(wgmma, "native_pred", _always)
    monkeypatch.setattr(wgmma, "lower_native", fake)
    M, K = 150, 0
    rng = np.random.default_rng(len(epilogue or "") * 7 + len(out))
    dty = "float32" if out == "f32" else "uint16"
    ldc, ldd = N + 2 + N % 2, ldd or N + 4 + N % 2
    cmat = rng.integers(-8, 8, (M, N)).astype(np.float32)
    c = NC.store("f32", cmat, "row", ldc)
    d = np.full((M - 1) * ldd + N + 8, NC.POISON[dty], dty)
    poison = d.copy()
    bias, bbuf, ldbias = _bias(rng, epilogue, out, M, N) if epilogue else (None, None, 1)
    r, col = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    sums = (3 * r + col).astype(np.float32) + cmat
    want = _round(out, epilogue_oracle(epilogue, sums, bias, ALPHA, BETA, LO, HI))
    ptx = compile_ptx(gemm_source("f16", bn=64, out=out, epilogue=epilogue,
                                  persistent=persistent, schedule=schedule), "sm_90a")
    assert "wgmma" not in ptx
    assert not epilogue or "mul.rn.f32" in ptx or "alpha" not in EPILOGUES[epilogue]
    tiles = 2 * 2                                         # ceil(150/128) x ceil(70/64)
    if persistent:                    # 3 workgroups over 4 tiles: one runs two of them,
        tiles = 3                     # the ring state and origins carried between them
    args = [("buf", "a", np.zeros(8, np.uint16)), ("buf", "b", np.zeros(8, np.uint16)),
            ("buf", "c", c), ("buf", "d", d)] + \
        [("u32", v) for v in (M, N, K, 8, 8, ldc, ldd)]
    if epilogue:
        args += [("buf", "bias", bbuf), ("u32", ldbias)] + \
            [("u32", f32_bits(v)) for v in (ALPHA, BETA, LO, HI)]
    nan = f32_bits(float("nan"))
    run = Sim(ptx, "gemm", undefined=nan) if sim is None else \
        sim(ptx, "gemm", native_launch("f16", 128, 64, out, schedule or "cooperative")[1],
            undefined=nan)
    mem = run.run((tiles, 1), 384, args)
    if sim is not None:
        assert run.stores > 0
    got = mem.read("d")
    raw = got.view(np.uint32) if out == "f32" else got
    np.testing.assert_array_equal(O.logical(raw, M, N, "row", ldd), want)
    untouched = np.ones(got.size, bool)
    untouched[O.index("row", ldd, r, col)] = False
    np.testing.assert_array_equal(got[untouched], poison[untouched])
