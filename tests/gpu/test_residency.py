"""Hardware: tensor accumulator residency gives bitwise the same tiles as replay and as the
unoptimized compile, and matches a float64 reference.

The K loop (for and while spellings; K = 7 chunks, so the x2 main loop and the remainder
both run) and a three-MMA chain (K = 3 chunks) compute D = C + A*B over random non-zero
f16 A/B and f32 C, one subgroup per 16x16 tile. Each kernel runs compiled three ways: no -O
(every MMA loads C and stores D), -O (resident: C once, D once), and -O with
--gpu-tensor-tuple-budget=16 (the same optimized IR, replayed).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.tensor.residency_kernels import ALL
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

MODES = {"plain": dict(optimize=False), "resident": dict(optimize=True),
         "replay": dict(optimize=True, tensor_tuple_budget=16)}
CASES = {"kloop_for": (48, 64, 112), "kloop_while": (48, 64, 112), "chain3": (32, 48, 48)}


def compile_mode(tmp_path, mode: str) -> str:
    path = tmp_path / f"residency_{mode}.mettle"
    path.write_text(ALL)
    arch = detect_local_arch() or "sm_90a"
    return compile_file(str(path), Options(emit="ptx", gpu_arch=arch, **MODES[mode])) \
        .data.decode()


@pytest.mark.parametrize("name", sorted(CASES))
def test_resident_replay_and_plain_agree_bitwise(gpu_run, tmp_path, name):
    m, n, k = CASES[name]
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    a[a == 0], b[b == 0] = 0.5, 0.5
    c = rng.standard_normal((m, n)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    tiles = (m // 16) * (n // 16)
    got = {}
    for mode in MODES:
        ptx = compile_mode(tmp_path, mode)
        out = gpu_run(ptx, name, grid=(tiles + 3) // 4, block=128, args=[
            Buffer("a", "uint16", data=a.view(np.uint16).ravel()),
            Buffer("b", "uint16", data=b.view(np.uint16).ravel()),
            Buffer("c", "float32", data=c.ravel(), output=True),
            Scalar("int32", m), Scalar("int32", n), Scalar("int32", k)])
        got[mode] = out["c"].reshape(m, n)
        err = np.abs(got[mode] - want).max() / np.abs(want).max()
        assert err < 1e-3, f"{name} {mode}: max relative error {err}"
    assert got["resident"].tobytes() == got["replay"].tobytes()
    assert got["resident"].tobytes() == got["plain"].tobytes()


@pytest.mark.parametrize("stages", [3])
def test_explicit_pipeline_resident_replay_plain_agree(gpu_run, tmp_path, stages):
    """A 3-stage async-copy/MMA schedule: D = C + sum_s A_s B_s over contiguous 16x16 tiles."""
    from tests.tensor.residency_kernels import pipeline
    rng = np.random.default_rng(stages)
    a = rng.standard_normal((stages, 16, 16)).astype(np.float16)
    b = rng.standard_normal((stages, 16, 16)).astype(np.float16)
    a[a == 0], b[b == 0] = 0.5, 0.5
    c = rng.standard_normal((16, 16)).astype(np.float32)
    want = c + sum(a[s].astype(np.float64) @ b[s].astype(np.float64) for s in range(stages))
    got = {}
    for mode, kw in MODES.items():
        path = tmp_path / f"pipe_{mode}.mettle"
        path.write_text(pipeline(stages))
        arch = detect_local_arch() or "sm_90a"
        ptx = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, **kw)).data.decode()
        out = gpu_run(ptx, f"pipe{stages}", grid=1, block=32, args=[
            Buffer("a", "uint16", data=a.view(np.uint16).ravel()),
            Buffer("b", "uint16", data=b.view(np.uint16).ravel()),
            Buffer("c", "float32", data=c.ravel(), output=True)])
        got[mode] = out["c"].reshape(16, 16)
        err = np.abs(got[mode] - want).max() / np.abs(want).max()
        assert err < 1e-3, f"pipe{stages} {mode}: max relative error {err}"
    assert got["resident"].tobytes() == got["replay"].tobytes() == got["plain"].tobytes()


@pytest.mark.parametrize("case", ["relu_alpha", "clamp", "bias"])
def test_fused_epilogue_resident_replay_plain_agree(gpu_run, tmp_path, case):
    """K loop + tensor_epilogue on the tile: fused onto the registers (resident), the complete
    memory operation (replay, plain, and every bias case): bitwise equal, and equal to a
    float64 GEMM followed by the epilogue in float32."""
    from tests.tensor.residency_kernels import EPILOGUES, with_epilogue
    opts, params = EPILOGUES[case]
    m, n, k = 32, 48, 80
    rng = np.random.default_rng(len(case))
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    a[a == 0], b[b == 0] = 0.5, 0.5
    c = rng.standard_normal((m, n)).astype(np.float32)
    extra = {"relu_alpha": [Scalar("float32", 0.75)],
             "clamp": [Scalar("float32", -2.0), Scalar("float32", 3.0)],
             "bias": [Buffer("bias", "float32",
                             data=rng.standard_normal(n).astype(np.float32))]}[case]
    tiles = (m // 16) * (n // 16)
    got = {}
    for mode, kw in MODES.items():
        path = tmp_path / f"ep_{mode}.mettle"
        path.write_text(with_epilogue(opts, extra_params=params))
        arch = detect_local_arch() or "sm_90a"
        ptx = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, **kw)).data.decode()
        out = gpu_run(ptx, "gemm_ep", grid=(tiles + 3) // 4, block=128, args=[
            Buffer("a", "uint16", data=a.view(np.uint16).ravel()),
            Buffer("b", "uint16", data=b.view(np.uint16).ravel()),
            Buffer("c", "float32", data=c.ravel(), output=True),
            Scalar("int32", m), Scalar("int32", n), Scalar("int32", k), *extra])
        got[mode] = out["c"].reshape(m, n)
    d = (a.astype(np.float64) @ b.astype(np.float64) + c)
    if case == "relu_alpha":
        want = np.maximum(d * 0.75, 0)
    elif case == "clamp":
        want = np.clip(d, -2.0, 3.0)
    else:                       # every 16x16 tile's epilogue reads bias[0..15] (its own base)
        want = d + np.tile(extra[0].data.astype(np.float64)[:16], n // 16)[None, :]
    err = np.abs(got["resident"] - want).max() / np.abs(want).max()
    assert err < 1e-3, f"{case}: max relative error {err}"
    assert got["resident"].tobytes() == got["replay"].tobytes() == got["plain"].tobytes()
