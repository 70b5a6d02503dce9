"""GEMM benchmark (a script, not a test): Mettle tensor_matmul against torch.matmul.

    python3 bench/gemm.py [--json gemm.json] [--reps 10] [--sizes 4096 8192]

The kernel is Mettle source (tests/tensor/kernels.matmul_source): each warp owns one
logical region (a grid of 16x16 WMMA tiles whose fragments are reused across the grid),
several warps per block take neighbouring regions, f16 or bf16 inputs (A row-major, B
column-major), f32 accumulate and result, runtime strides. It is loaded through our ctypes
driver binding into torch's primary context and launched on torch's buffers; every
candidate region shape is validated against torch (fp32 reference of the same inputs)
before it is timed with CUDA events. TFLOP/s counts 2*M*N*K per GEMM (C is added too).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from tests.tensor.kernels import compile_ptx, matmul_source  # noqa: E402
from toolchain.providers.cuda import driver  # noqa: E402
from timing import timed  # noqa: E402

# (region shape, warps per block): candidates; the fastest validated one is reported.
CANDIDATES = (("m64n64k16", 4), ("m64n64k16", 2), ("m32n64k16", 4), ("m64n32k16", 4),
              ("m32n32k16", 4))


def launcher(dev, arch, fmt, shape, warps, a, b, c, d, size):
    src = matmul_source("gemm", fmt, fmt, "f32", "f32", shape,
                        layouts=("row", "col", "row", "row"), warps=warps)
    fn = dev.load_ptx(compile_ptx(src, arch)).function("gemm")
    m, n = (int(x) for x in shape[1:].split("k")[0].split("n"))
    grid = ((size + n * warps - 1) // (n * warps), (size + m - 1) // m, 1)
    u32 = ctypes.c_uint32
    args = [ctypes.c_uint64(t.data_ptr()) for t in (a, b, c, d)] + \
        [u32(size)] * 3 + [u32(size)] * 4
    return lambda: fn.launch(grid, 32 * warps, args)


def bench_size(torch, dev, arch, fmt, size, reps):
    dtype = torch.float16 if fmt == "f16" else torch.bfloat16
    a = torch.randn(size, size, device="cuda").to(dtype)          # row-major A
    bt = torch.randn(size, size, device="cuda").to(dtype)         # B^T row-major = B col
    c = torch.zeros(size, size, device="cuda", dtype=torch.float32)
    d = torch.empty_like(c)
    ref = a.float() @ bt.float().t()
    best = None
    for shape, warps in CANDIDATES:
        run = launcher(dev, arch, fmt, shape, warps, a, bt, c, d, size)
        d.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        err = ((d - ref).abs().max() / ref.abs().max()).item()
        if not err < 1e-3:
            raise SystemExit(f"{fmt} {size}^3 {shape}x{warps}: result differs from torch "
                             f"(max rel err {err})")
        ms = timed(torch, run, reps)
        if best is None or ms < best[0]:
            best = (ms, f"{shape} x{warps} warps")
    b = bt.t()
    torch_ms = timed(torch, lambda: torch.matmul(a, b), reps)
    flop = 2.0 * size ** 3
    return {"dtype": fmt, "size": size, "mettle_ms": round(best[0], 4),
            "mettle_tflops": round(flop / best[0] / 1e9, 1), "config": best[1],
            "torch_ms": round(torch_ms, 4),
            "torch_tflops": round(flop / torch_ms / 1e9, 1),
            "ratio": round(torch_ms / best[0], 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="gemm.json")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    args = ap.parse_args()
    import torch
    torch.zeros(1, device="cuda")               # create torch's (primary) context first
    dev = driver.Device(0)
    major, minor = dev.compute_capability
    arch = f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    rows = [bench_size(torch, dev, arch, fmt, size, args.reps)
            for fmt in ("f16", "bf16") for size in args.sizes]
    print(f"device: {dev.name} ({arch})")
    print(f"{'gemm':<14} {'mettle TFLOP/s':>15} {'torch TFLOP/s':>14} {'ratio':>7}  config")
    for r in rows:
        print(f"{r['dtype']} {r['size']}^3".ljust(14) + f" {r['mettle_tflops']:>15.1f} "
              f"{r['torch_tflops']:>14.1f} {r['ratio']:>7.3f}  {r['config']}")
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": dev.name, "arch": arch, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
