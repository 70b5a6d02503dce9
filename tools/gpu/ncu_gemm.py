"""One launch each of the persistent workgroup GEMM (f16 in, D f32 with C, and D f16
without C) and of torch.matmul, per shape: a driver for Nsight Compute on the H200.

    ncu --clock-control none -k regex:gemm|sm90 --section SpeedOfLight ... \
        python3 tools/gpu/ncu_gemm.py 4096x4096x4096 8192x8192x1024
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

import torch  # noqa: E402  # pants: no-infer-dep

import gemm_hopper as H  # noqa: E402  # pants: no-infer-dep
import mettle  # noqa: E402


def main(shapes: list[str]) -> int:
    torch.zeros(1, device="cuda")  # torch first: mettle joins its primary context
    dev = mettle.device(0)
    kernels = {out: H.Gemm(dev, "f16", out=out, persistent=True) for out in ("f32", "f16")}
    for shape in shapes:
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda").half()
        bt = torch.randn(n, k, device="cuda").half()
        c = torch.randn(m, n, device="cuda")
        kernels["f32"].launcher(a, bt, c, torch.empty_like(c), m, n, k)()
        d16 = torch.empty(m, n, device="cuda", dtype=torch.float16)
        kernels["f16"].launcher(a, bt, c[:1], d16, m, n, k, ldc=0)()
        torch.matmul(a, bt.t())
        torch.cuda.synchronize()
        print(f"launched {shape}: ours f32+C, ours f16 noC, torch.matmul", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["4096x4096x4096"]))
