"""Hardware: register-resident tiles (toolchain/compiler/frontend/tile_frag.py) on a real
warp-MMA GPU. The exact operations give the replay's bits (masks, row max with signed
zeros and NaN, canonical row sums, exp2, division, conversion: the interpreter's models of
max.f32, shfl, ldmatrix and cp.async are checked against silicon here); the matmul of a
register tile and a shared tile is exact on small integers (aligned and misaligned
copies, ragged tails); and the attention example's shipped variants (block 256, launched
here directly, not through the launcher) match the float64 oracle with the tolerance of
tests/tensor/test_tile_attention.py. The matmul and attention tests run both forms of the
matmuls: mma.sync and, with the compile option tile_wgmma, wgmma with A from registers
(frontend/tile_wgmma.py; on a GPU without wgmma that option keeps mma.sync)."""
from __future__ import annotations

import numpy as np
import pytest

from examples.attention.attention import SOURCE, constants, reference
from tests.gpu.harness import Buffer, Scalar
from tests.tensor.test_tile_attention import TOL, from_bits, to_bits
from tests.tensor.test_tile_frag import MATMUL, SOFTMAX
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch


def wgmma_here() -> bool:
    from toolchain.compiler import targets
    arch = detect_local_arch() or "sm_90a"
    return targets.resolve_target("ptx", arch).capabilities.wgmma


# the matmuls' form: mma.sync, wgmma (tile_wgmma), wgmma with A tiles in workgroup memory
FORMS = ("mma", "wgmma", "wgmma-ss")
OPTIONS = {"mma": {"tile_wgmma": False},
           "wgmma": {"tile_wgmma": True, "tile_wgmma_a": "registers"},
           "wgmma-ss": {"tile_wgmma": True, "tile_wgmma_a": "shared"}}


def check_form(explain: str, form: str) -> None:
    assert "held in registers" in explain, explain
    wgmma = form.startswith("wgmma") and wgmma_here()
    assert ("on wgmma" in explain) == wgmma, explain
    assert ("A from shared tiles" in explain) == (wgmma and form == "wgmma-ss"), explain


def ptx_of(tmp_path, text: str, consts=(), **opts) -> tuple[str, str]:
    path = tmp_path / "k.mettle"
    path.write_text(text)
    res = compile_file(str(path), Options(emit="ptx", gpu_arch=detect_local_arch() or "sm_90a",
                                          optimize=True, explain=True, consts=tuple(consts),
                                          **opts))
    ptx_of.shared = max((k.get("shared_bytes", 0) for k in res.signature["kernels"]),
                        default=0)              # tiles in dynamic workgroup memory
    return res.data.decode(), res.explain or ""


def test_exact_operations_give_the_replays_bits_on_the_gpu(gpu_run, tmp_path):
    n, m = 300, 29
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, (n, m)).astype(np.float32)
    x[3, :5] = [0.0, -0.0, 0.0, -0.0, 0.0]
    x[7, :] = -0.0
    x[9, :] = -np.abs(x[9, :])
    x[9, 10], x[9, 11] = -0.0, 0.0
    x[10, :] = -np.abs(x[10, :])
    x[10, 13] = -0.0
    x[11, 12] = np.nan
    c = np.float32(1.4426950408889634 * 0.3)
    out = {}
    for form, opts in (("frag", {}), ("replay", {"tile_mma": False})):
        ptx, explain = ptx_of(tmp_path, SOFTMAX, **opts)
        assert ("held in registers" in explain) == (form == "frag"), explain
        res = gpu_run(ptx, "rows", grid=-(-n // 64), block=128, args=[
            Buffer("x", "float32", data=x.ravel()),
            Buffer("y", "float32", n * m, poison=np.nan, output=True),
            Buffer("r", "float32", n, poison=np.nan, output=True),
            Buffer("h", "uint16", n * m, output=True),
            Buffer("mxo", "float32", n, poison=np.nan, output=True),
            Scalar("uint32", n), Scalar("uint32", m), Scalar("float32", float(c)),
            Scalar("int32", 5)])
        out[form] = {k: np.asarray(v).view(np.uint32 if k != "h" else np.uint16)
                     for k, v in res.items()}
    for k in ("y", "r", "h", "mxo"):
        assert np.array_equal(out["frag"][k], out["replay"][k]), k
    assert out["frag"]["mxo"][9] == 0 and out["frag"]["mxo"][10] == 0x80000000


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("layout,m,k,n,lda,ldb", [
    ("row", 200, 32, 48, 32, 48), ("row", 64, 27, 45, 27, 48), ("row", 50, 32, 48, 33, 49),
    ("col", 130, 32, 48, 32, 32), ("col", 90, 19, 41, 19, 21)])
def test_register_times_shared_tile_matmul_is_exact_on_the_gpu(gpu_run, tmp_path, layout, m,
                                                               k, n, lda, ldb, form):
    ptx, explain = ptx_of(tmp_path, MATMUL.replace(" LAYOUT", ", layout: col"
                                                   if layout == "col" else ""),
                          **OPTIONS[form])
    check_form(explain, form)
    rng = np.random.default_rng(m + k + n)
    a = rng.integers(-3, 4, (m, lda)).astype(np.float16)
    bmat = rng.integers(-3, 4, (k, n)).astype(np.float16)
    bmem = np.zeros((k, ldb) if layout == "row" else (n, ldb), np.float16)
    if layout == "row":
        bmem[:, :n] = bmat
    else:
        bmem[:, :k] = bmat.T
    c = rng.integers(-20, 20, (m, n)).astype(np.float32)
    out = gpu_run(ptx, "mm", grid=-(-m // 64), block=128, args=[
        Buffer("a", "uint16", data=a.view(np.uint16).ravel()),
        Buffer("b", "uint16", data=bmem.view(np.uint16).ravel()),
        Buffer("c", "float32", data=c.ravel()),
        Buffer("d", "float32", m * n, poison=np.nan, output=True),
        Scalar("uint32", m), Scalar("uint32", k), Scalar("uint32", n), Scalar("uint32", lda),
        Scalar("uint32", ldb)])["d"]
    want = a[:, :k].astype(np.float64) @ bmat.astype(np.float64) + c
    assert np.array_equal(np.asarray(out).reshape(m, n), want.astype(np.float32))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("d,block_n", [(64, None), (128, None), (64, 64), (128, 128)])
@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_variants_match_the_float64_oracle_on_the_gpu(gpu_run, tmp_path, d, fmt,
                                                                causal, form, block_n):
    """The shipped blocks; d64 with 64 keys a step: there ptxas once gave Q's registers
    (read by every S wgmma) to P inside the loop (lower_tile._held); d128 with 128 keys a
    step: on wgmma its 64-80 KiB of tiles live in dynamic workgroup memory, which the
    launch gives (the signature's shared_bytes)."""
    if (d, block_n) == (128, 128) and form == "mma":
        pytest.skip("over 48 KiB of padded tiles: this form replays (tile-frag.md)")
    text = SOURCE.read_text(encoding="utf-8")
    consts = {"HEAD_DIM": d, "ELEM": fmt, **({"BLOCK_N": block_n} if block_n else {})}
    shape = constants(consts)                               # the launcher's const reader
    block, rows = shape["WORK_ITEMS"], shape["BLOCK_M"]
    ptx, explain = ptx_of(tmp_path, text, consts=tuple((k, str(v)) for k, v in consts.items()),
                          **OPTIONS[form])
    check_form(explain, form)
    for n, bh in ((1, 2), (77, 3), (300, 2), (1000, 1)):
        rng = np.random.default_rng(n * 3 + d + causal)
        q, k, v = (to_bits(rng.uniform(-1, 1, (bh, n, d)), fmt) for _ in range(3))
        scale = d ** -0.5
        out = gpu_run(ptx, "attention", grid=(-(-n // rows), bh, 1), block=block,
                      shared=ptx_of.shared, args=[
            Buffer("q", "uint16", data=q.ravel()), Buffer("k", "uint16", data=k.ravel()),
            Buffer("v", "uint16", data=v.ravel()),
            Buffer("o", "uint16", bh * n * d, poison=0xFFFF, output=True),
            Scalar("uint32", n), Scalar("float32", scale), Scalar("uint32", int(causal))])["o"]
        got = from_bits(np.asarray(out, np.uint16).reshape(bh, n, d), fmt)
        want = reference(from_bits(q, fmt), from_bits(k, fmt), from_bits(v, fmt), causal,
                         scale)
        err = np.abs(got - want).max()
        assert err <= TOL[fmt], (n, err)


def test_a_launch_short_of_the_tiles_dynamic_memory_fails_cleanly(gpu_run, tmp_path):
    """d128 with 128 keys a step, Q shared: its tiles need 80 KiB of dynamic workgroup
    memory. A launch that gives 1 KiB less traps at the kernel's entry (the launch fails;
    nothing past the memory is touched), and the full amount runs."""
    if not wgmma_here():
        pytest.skip("the tiles go to dynamic memory only on wgmma (sm_90a)")
    consts = (("HEAD_DIM", "128"), ("BLOCK_N", "128"))
    ptx, _ = ptx_of(tmp_path, SOURCE.read_text(encoding="utf-8"), consts=consts,
                    **OPTIONS["wgmma-ss"])
    need = ptx_of.shared
    assert need == 81920
    n = 130
    q = to_bits(np.random.default_rng(1).uniform(-1, 1, (1, n, 128)), "f16")

    def launch(shared):
        return gpu_run(ptx, "attention", grid=(-(-n // 64), 1, 1), block=128, shared=shared,
                       args=[Buffer("q", "uint16", data=q.ravel()),
                             Buffer("k", "uint16", data=q.ravel()),
                             Buffer("v", "uint16", data=q.ravel()),
                             Buffer("o", "uint16", n * 128, poison=0xFFFF, output=True),
                             Scalar("uint32", n), Scalar("float32", 0.125),
                             Scalar("uint32", 0)])["o"]
    assert np.isfinite(from_bits(np.asarray(launch(need), np.uint16), "f16")).all()
    with pytest.raises(AssertionError):
        launch(need - 1024)
