"""Hardware tests of the FP8 workgroup tensor_matmul (targets/ptx/tensor/wgmma_fp8.py,
docs/reference/gemm-fp8.md) on the H200: E4M3/E5M2 A and B (mixed too), per-tensor f32
scales, f32/f16/bf16 D, fused epilogues, one region per workgroup and the persistent tile
loop, on M/N/K tails. Data are small exact FP8 values (bench/fp8_kernels.exact_values:
every partial sum exact even in the tensor core's FP8 accumulation) and power-of-two
scales, so the sm_90a pipeline (384 work-items with its dynamic shared memory), the split
replay on the same GPU (256 work-items, or a leading dimension that is not a multiple of
16 bytes) and the float oracle must agree bit for bit; D is NaN/0x7E00-poisoned and its
padding must stay untouched. Each launch runs in its own process (harness.run_kernel);
$METTLE_GPU_SANITIZER=memcheck|racecheck runs them under compute-sanitizer.

    python3 -m pytest tests/gpu/test_gemm_fp8.py
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from bench.fp8_kernels import exact_values, fp8_source, grid, native_launch
from bench.wgmma_kernels import EPILOGUES, epilogue_oracle
from tests.gpu.harness import Buffer, Scalar
from tests.support import tensor_oracle as O
from tests.tensor.kernels import compile_ptx
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

ALPHA, BETA, LO, HI = 0.3, -1.5, -200.0, 300.0
SA, SB = 0.5, 4.0
POISON = {"float32": float("nan"), "uint16": 0x7E00}   # plain scalars: the job file is JSON
BN = 256


def _arch() -> str:
    return detect_local_arch() or "sm_90a"


def _round(out: str, t: np.ndarray) -> np.ndarray:
    if out == "f16":
        return t.astype(np.float16).view(np.uint16)
    if out == "bf16":
        return O.to_bf16_bits(t)
    return t


def _bias(rng, epilogue, out, M, N):
    """(logical float32 bias, stored buffer in D's storage, ldbias)."""
    dty = np.float32 if out == "f32" else np.uint16
    if epilogue is None or "bias_mode" not in EPILOGUES[epilogue]:
        return None, np.zeros(4, dty), 1
    opts = EPILOGUES[epilogue]
    mode = re.search(r"bias_mode: (\w+)", opts).group(1)
    shape = {"row": (M,), "column": (N,), "matrix": (M, N)}[mode]
    vals = (rng.integers(-40, 40, shape) / 4).astype(np.float32)
    enc = (lambda v: v) if out == "f32" else (lambda v: _round(out, v))
    if mode != "matrix":
        return vals, np.ascontiguousarray(enc(vals)), 1
    if "bias_layout: col" in opts:
        ld = M + 3
        buf = np.zeros((N, ld), vals.dtype)
        buf[:, :M] = vals.T
    else:
        ld = N + 3
        buf = np.zeros((M, ld), vals.dtype)
        buf[:, :N] = vals
    return vals, np.ascontiguousarray(enc(buf)).ravel(), ld


def _case(gpu_run, a, b, out, scaled, epilogue, persistent, M, N, K, native=True,
          lda_extra=0, schedule=None, timeout=600):
    """Run one configuration; return D's logical values (raw bits for 16-bit results)."""
    rng = np.random.default_rng(M * 7 + N * 3 + K + len(out) + persistent)
    lda = -(-K // 16) * 16 + lda_extra
    ldb = -(-K // 16) * 16
    ldc, ldd = N + N % 2 + 2, N + N % 2 + 4
    abits, av = exact_values(rng, (M, K), a)
    bbits, bv = exact_values(rng, (N, K), b)          # B column-major: N rows of K
    A = np.zeros((M, lda), np.uint8)
    A[:, :K] = abits
    B = np.zeros((N, ldb), np.uint8)
    B[:, :K] = bbits
    c = rng.integers(-8, 8, (M, N)).astype(np.float32)
    C = np.zeros((M, ldc), np.float32)
    C[:, :N] = c
    bias, bbuf, ldbias = _bias(rng, epilogue, out, M, N)
    S = av @ bv.T
    t = ((S * (SA * SB)) if scaled else S) + c
    want = _round(out, epilogue_oracle(epilogue, t.astype(np.float32), bias, ALPHA, BETA,
                                       LO, HI))
    dty = "float32" if out == "f32" else "uint16"
    size = M * ldd + 64
    ptx = compile_ptx(fp8_source(a, b, out, scaled, epilogue, persistent,
                                 schedule=schedule), _arch())
    threads, shared = native_launch(schedule=schedule or "cooperative")
    block, smem = (threads, shared) if native else (256, 0)
    wgs = min(132, grid(M, N)) if persistent else grid(M, N)
    args = [Buffer("a", "uint8", data=A.ravel()), Buffer("b", "uint8", data=B.ravel()),
            Buffer("c", "float32", data=C.ravel()),
            Buffer("d", dty, size=size, poison=POISON[dty], output=True),
            Scalar("uint32", M), Scalar("uint32", N), Scalar("uint32", K),
            Scalar("uint32", lda), Scalar("uint32", ldb), Scalar("uint32", ldc),
            Scalar("uint32", ldd),
            Buffer("sa", "float32", data=np.array([SA if scaled else 7.0], np.float32)),
            Buffer("sb", "float32", data=np.array([SB if scaled else 9.0], np.float32))]
    if epilogue:
        args += [Buffer("bias", dty, data=bbuf), Scalar("uint32", ldbias),
                 Scalar("float32", ALPHA), Scalar("float32", BETA), Scalar("float32", LO),
                 Scalar("float32", HI)]
    d = gpu_run(ptx, "gemm8", grid=wgs, block=block, args=args, shared=smem,
                timeout=timeout)["d"]
    inside = np.zeros(size, bool)
    rows, cols = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    inside[rows * ldd + cols] = True
    outside = d[~inside]
    if dty == "float32":
        assert np.isnan(outside).all(), "D's padding was written"
    else:
        assert (outside == POISON[dty]).all(), "D's padding was written"
    got = d[:M * ldd].reshape(M, ldd)[:, :N]
    if dty == "float32":
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    else:
        np.testing.assert_array_equal(got, want)
    return got


SHAPES = [(128, 256, 128), (300, 520, 200), (129, 264, 392)]
CONFIGS = [("e4m3", "e4m3", "bf16", True, None, False),
           ("e4m3", "e4m3", "f32", True, None, False),
           ("e5m2", "e5m2", "f16", True, None, False),
           ("e4m3", "e5m2", "bf16", False, None, False),
           ("e4m3", "e4m3", "bf16", True, "col_bias_relu", False),
           ("e5m2", "e4m3", "f32", True, "matrix_bias_col", False),
           ("e4m3", "e4m3", "f16", True, "scale_clamp", True),
           ("e4m3", "e4m3", "bf16", True, "row_bias", True)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("a,b,out,scaled,epilogue,persistent", CONFIGS)
def test_pipeline_and_split_equal_the_oracle(gpu_run, a, b, out, scaled, epilogue,
                                             persistent, shape):
    if not _arch().startswith("sm_90"):
        pytest.skip("the FP8 pipeline is sm_90a; elsewhere both launches replay")
    M, N, K = shape
    native = _case(gpu_run, a, b, out, scaled, epilogue, persistent, M, N, K, native=True)
    split = _case(gpu_run, a, b, out, scaled, epilogue, persistent, M, N, K, native=False)
    assert native.tobytes() == split.tobytes()


# `schedule: pingpong` (persistent): tails, a right half tile wholly outside N (N = 100),
# an odd tile count per workgroup (300x1000: 3 x 4 tiles on 132 workgroups: 12 single
# tiles; 5000x3000 on 132: 40 x 12 = 480 tiles, 3 or 4 a workgroup), K = 0 (D = C)
PINGPONG_SHAPES = [(128, 256, 128), (300, 520, 200), (129, 264, 392), (100, 100, 64),
                   (64, 64, 0), (1000, 1000, 1008)]
PINGPONG_CONFIGS = [("e4m3", "e4m3", "bf16", True, None),
                    ("e5m2", "e4m3", "f32", True, "matrix_bias_col"),
                    ("e4m3", "e4m3", "f16", False, "col_bias_relu")]


@pytest.mark.parametrize("shape", PINGPONG_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("a,b,out,scaled,epilogue", PINGPONG_CONFIGS)
def test_pingpong_equals_the_oracle(gpu_run, a, b, out, scaled, epilogue, shape):
    """The ping-pong pipeline (each launch in its own process, 120 s: a hang fails the
    case, not the run) bit for bit equal to the oracle and to the split replay."""
    if not _arch().startswith("sm_90"):
        pytest.skip("the FP8 pipeline is sm_90a; elsewhere both launches replay")
    M, N, K = shape
    native = _case(gpu_run, a, b, out, scaled, epilogue, True, M, N, K, native=True,
                   schedule="pingpong", timeout=120)
    if M * N * K <= 1 << 25:
        split = _case(gpu_run, a, b, out, scaled, epilogue, True, M, N, K, native=False,
                      schedule="pingpong", timeout=120)
        assert native.tobytes() == split.tobytes()


def test_misaligned_leading_dimension_takes_the_split_path(gpu_run):
    """lda = 4 mod 16 bytes: the pipeline's TMA needs 16-byte pitches, so the run-time
    predicate sends a 384-item launch to the split replay, which must still be exact."""
    _case(gpu_run, "e4m3", "e4m3", "bf16", True, None, False, 160, 256, 200, lda_extra=4)


def test_k_zero_copies_c(gpu_run):
    _case(gpu_run, "e4m3", "e4m3", "f32", True, "scale_clamp", False, 64, 64, 0)


def _bench_check(*args: str, timeout: int) -> str:
    """bench/gemm_fp8.py --check --no-bench ARGS in its own process (Hopper only)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability(0) != (9, 0):
        pytest.skip("not a compute capability 9.0 (Hopper) GPU")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "bench" / "gemm_fp8.py"), "--check",
                           "--no-bench", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=root,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "FP8 CHECK OK" in out, out
    return out


def test_against_cublas_fp8_and_200_launches():
    """bench/gemm_fp8.py --check in its own process: exact checks on both paths, random
    E4M3/E5M2 data against torch._scaled_mm with the same scales (f32/bf16 D), and 200
    back-to-back launches per configuration with the result checked after them."""
    _bench_check("--formats", "e4m3,e5m2", "--out", "bf16,f32",
                 "--forms", "workgroup,persistent", timeout=1200)


def test_pingpong_against_cublas_fp8_and_200_launches():
    """bench/gemm_fp8.py --check --forms pingpong in its own process (300 s limit: a
    hang fails the test): exact checks on the pipeline and the split replay, random data
    against torch._scaled_mm, 200 back-to-back launches of 4096^3."""
    _bench_check("--formats", "e4m3", "--out", "bf16,f32", "--forms", "pingpong",
                 timeout=300)
