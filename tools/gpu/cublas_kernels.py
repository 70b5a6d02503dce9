"""Which kernels cuBLAS runs for the GEMM table's contracts (a probe, not a benchmark).

cuBLAS names its Hopper kernels after their configuration (tile size, cluster shape,
stream-K or not), so the names answer "what does the reference do on this shape" without
its source. For each shape and format this runs torch.matmul(a, b) as bench/gemm.py times
it (A row-major M x K, B the transpose of an N x K tensor, D in the input format) and
torch._scaled_mm for e4m3 (bench/gemm_fp8.py's contract), under torch.profiler, and prints
every GPU kernel with its mean time.

    python3 tools/gpu/cublas_kernels.py [--shapes MxNxK,...] [--fp8-shapes MxNxK,...]
"""
from __future__ import annotations

import argparse

TABLE = "4096x4096x4096,8192x8192x8192,8192x8192x1024,16384x1024x4096,5000x3000x4104"


def shapes(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]


def kernels(torch, run, reps: int = 5) -> list[tuple[str, float]]:
    """(name, mean microseconds) of every GPU kernel `run` launches, after a warm-up."""
    from torch.profiler import ProfilerActivity, profile  # pants: no-infer-dep
    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            run()
        torch.cuda.synchronize()
    return [(e.key, e.device_time_total / max(e.count, 1)) for e in prof.key_averages()
            if e.device_time_total > 0]


def report(label: str, found: list[tuple[str, float]]) -> None:
    for name, us in found:
        print(f"{label:<28} {us:9.1f} us  {name}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=TABLE)
    ap.add_argument("--fp8-shapes", default="4096x4096x4096,8192x8192x8192")
    args = ap.parse_args()
    import torch  # pants: no-infer-dep
    for m, n, k in shapes(args.shapes):
        for dtype in (torch.float16, torch.bfloat16):
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(n, k, device="cuda").to(dtype).t()
            report(f"{str(dtype)[6:]} {m}x{n}x{k}", kernels(torch, lambda: torch.matmul(a, b)))
    one = torch.ones((), device="cuda")
    for m, n, k in shapes(args.fp8_shapes):
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        report(f"e4m3 {m}x{n}x{k}", kernels(torch, lambda: torch._scaled_mm(
            a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
