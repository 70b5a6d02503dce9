"""Hardware: WMMA operand staging (targets/ptx/tensor/staging.py) gives bitwise the direct
loads' tiles and matches a float64 reference.

Each kernel of tests/tensor/staging_kernels.py (run-time K loops with row-major f16 B,
column-major bf16 B and an m16n16k32 step of two WMMA chunks, a three-MMA chain) runs
compiled with -O three ways: staged and pipelined (the default: cp.async into two stages
per warp, each update multiplying the step copied before it), staged synchronously
(staging.PIPELINE off) and --gpu-wmma-staging=off (direct wmma.load from global). Random non-zero A/B (K with a tail past the last whole step), random C, and
a NaN-poisoned pad after C that must stay untouched. Aligned strides take the staged
form; a leading dimension that is not a multiple of 8 elements, or an A base 4 bytes off,
takes the direct fallback (those break the WMMA alignment precondition of gpu.md; the
direct form's 32-bit loads tolerate it on this hardware, which is what the fallback relies
on) and must give the same bits.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.tensor.staging_kernels import ALL, CASES, kloop, kloop_launch
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.tensor import staging as staging_mod
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

PAD = 64                                    # poisoned f32 elements after C
# name -> [(label, m, n, k, lda - k, ldb - (n or k), aoff)]; misaligned: lda or ldb = 4 mod 8
SHAPES = {"kloop_f16_row": [("aligned", 48, 64, 100, 12, 0, 0),
                            ("lda_misaligned", 48, 64, 100, 0, 0, 0),
                            ("a_base_misaligned", 48, 64, 112, 8, 0, 2)],
          "kloop_bf16_col": [("aligned", 32, 48, 80, 0, 16, 0),
                             ("ldb_misaligned", 32, 48, 80, 0, 4, 0)],
          "chain_f16_row": [("aligned", 32, 48, 48, 0, 0, 0),
                            ("lda_misaligned", 32, 48, 48, 4, 0, 0)],
          "kloop_k32_f16_col": [("aligned", 32, 64, 136, 0, 0, 0),
                                ("ldb_misaligned", 32, 64, 136, 0, 4, 0)]}


FORMS = (("pipelined", True, True), ("sync", True, False), ("direct", False, False))


def _ptx(tmp_path, monkeypatch, form: str, staging: bool, pipelined: bool,
         source: str = ALL) -> str:
    monkeypatch.setattr(staging_mod, "PIPELINE", pipelined)
    path = tmp_path / f"staging_{form}.mettle"
    path.write_text(source)
    arch = detect_local_arch() or "sm_90a"
    ptx = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, optimize=True,
                                          wmma_staging=staging)).data.decode()
    assert ("staged pipelined" in ptx) == pipelined
    return ptx


def _operand(rng, shape, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """(uint16 carrier bits, float64 values) of random non-zero f16 or bf16 elements."""
    x = rng.standard_normal(shape).astype(np.float32)
    x[x == 0] = 0.5
    if fmt == "f16":
        h = x.astype(np.float16)
        h[h == 0] = 0.5
        return h.view(np.uint16), h.astype(np.float64)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)      # truncate to bf16
    return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("name,case", [(n, c) for n, cs in SHAPES.items() for c in cs],
                         ids=[f"{n}-{c[0]}" for n, cs in SHAPES.items() for c in cs])
def test_staged_equals_direct_and_reference(gpu_run, tmp_path, monkeypatch, name, case):
    label, m, n, k, lda_extra, ldb_extra, aoff = case
    _, fmt, bl = CASES[name]
    ks = 32 if "k32" in name else 16
    kk = (k // ks) * ks if name.startswith("kloop") else 48     # the K the kernel consumes
    lda = k + lda_extra
    rng = np.random.default_rng(m * 1000 + k + lda_extra + aoff)
    a_bits, a_val = _operand(rng, (aoff + m * lda,), fmt)
    av = a_val[aoff:].reshape(m, lda)[:, :kk]
    if bl == "row":
        ldb = n + ldb_extra
        b_bits, b_val = _operand(rng, (k * ldb,), fmt)
        bv = b_val.reshape(k, ldb)[:kk, :n]
    else:
        ldb = k + ldb_extra
        b_bits, b_val = _operand(rng, (n * ldb,), fmt)
        bv = b_val.reshape(n, ldb)[:, :kk].T
    c = rng.standard_normal((m, n)).astype(np.float32)
    want = av @ bv + c
    tiles = (m // 16) * (n // 16)
    got = {}
    for form, staging, pipelined in FORMS:
        out = gpu_run(_ptx(tmp_path, monkeypatch, form, staging, pipelined), name, grid=(tiles + 3) // 4, block=128, args=[
            Buffer("a", "uint16", data=a_bits), Buffer("b", "uint16", data=b_bits),
            Buffer("c", "float32", size=m * n + PAD, data=c.ravel(), poison=np.nan,
                   output=True),
            Scalar("int32", m), Scalar("int32", n), Scalar("int32", k), Scalar("int32", lda),
            Scalar("int32", ldb), Scalar("int32", aoff)])
        res = out["c"]
        assert np.isnan(res[m * n:]).all(), f"{name} {label}: the pad after C was written"
        got[form] = res[:m * n].reshape(m, n)
        err = np.abs(got[form] - want).max() / np.abs(want).max()
        assert err < 1e-3, f"{name} {label} {form}: max relative error {err}"
    assert got["pipelined"].tobytes() == got["sync"].tobytes() == got["direct"].tobytes(), \
        f"{name} {label}: the staged forms differ from direct"


# No declared block shape (the plain-source K loop): the areas serve the subgroups the tile
# index names (kloop_held: `block.x * 4 + thread.x / 32`, 4) or staging.UNDECLARED_ITEMS
# (kloop_launch, whose index names none: 4 subgroups), and each update tests its subgroup: a
# 256- or 512-item block mixes staged and direct subgroups; every form gives the same bits.
KERNELS = {"kloop_launch": kloop_launch(), "kloop_held": kloop("kloop_held", block=False)}


@pytest.mark.parametrize("name,block", [("kloop_launch", 64), ("kloop_launch", 128),
                                        ("kloop_launch", 256), ("kloop_launch", 512),
                                        ("kloop_held", 128)])
@pytest.mark.parametrize("label,m,n,k,lda_extra", [("aligned", 64, 96, 200, 0),
                                                   ("lda_misaligned", 48, 64, 104, 4)])
def test_undeclared_block_staged_equals_direct(gpu_run, tmp_path, monkeypatch, name, block,
                                                label, m, n, k, lda_extra):
    lda, ldb = k + lda_extra, n
    rng = np.random.default_rng(block + k)
    a_bits, a_val = _operand(rng, (m * lda,), "f16")
    b_bits, b_val = _operand(rng, (k * ldb,), "f16")
    kk = (k // 16) * 16
    want = a_val.reshape(m, lda)[:, :kk] @ b_val.reshape(k, ldb)[:kk, :n]
    c = rng.standard_normal((m, n)).astype(np.float32)
    want = want + c
    tiles = (m // 16) * (n // 16)
    got = {}
    for form, staging, pipelined in FORMS:
        ptx = _ptx(tmp_path, monkeypatch, form, staging, pipelined, KERNELS[name])
        assert ("launch-guarded subgroups<=4" in ptx) == staging
        out = gpu_run(ptx, name, grid=(tiles * 32 + block - 1) // block, block=block,
                      args=[Buffer("a", "uint16", data=a_bits), Buffer("b", "uint16", data=b_bits),
                            Buffer("c", "float32", size=m * n + PAD, data=c.ravel(),
                                   poison=np.nan, output=True),
                            Scalar("int32", m), Scalar("int32", n), Scalar("int32", k),
                            Scalar("int32", lda), Scalar("int32", ldb), Scalar("int32", 0)])
        res = out["c"]
        assert np.isnan(res[m * n:]).all(), f"block {block} {label}: the pad after C was written"
        got[form] = res[:m * n].reshape(m, n)
        err = np.abs(got[form] - want).max() / np.abs(want).max()
        assert err < 1e-3, f"block {block} {label} {form}: max relative error {err}"
    assert got["pipelined"].tobytes() == got["sync"].tobytes() == got["direct"].tobytes(), \
        f"block {block} {label}: the staged forms differ from direct"
