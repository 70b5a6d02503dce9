"""Which kernels cuBLAS runs for the GEMM table's contracts (a probe, not a benchmark).

cuBLAS names its Hopper kernels after their configuration (tile size, cluster shape,
stream-K or not), so the names answer "what does the reference do on this shape" without
its source. For each shape and format this runs torch.matmul(a, b) as bench/gemm.py times
it (A row-major M x K, B the transpose of an N x K tensor, D in the input format) and
torch._scaled_mm for e4m3 (bench/gemm_fp8.py's contract), under torch.profiler, and prints
every GPU kernel with its mean time.

cuBLAS is column-major: torch runs the row-major D = A*B as D^T = B^T*A^T, so an nvjet
name's `MxN` tile is N rows by M columns of our D. Each named tile is printed in D's terms
with the count of tiles and of rounds over SMS multiprocessors, beside ours
(OUR_TILES), since the rounds are what the tile choice decides (docs/internals/
measurements.md: 5000x3000x4104).

    python3 tools/gpu/cublas_kernels.py [--shapes MxNxK,...] [--fp8-shapes MxNxK,...]
"""
from __future__ import annotations

import argparse
import math
import re

TABLE = "4096x4096x4096,8192x8192x8192,8192x8192x1024,16384x1024x4096,5000x3000x4104"
SMS = 132                                  # H100/H200 SXM multiprocessors
OUR_TILES = ((128, 256), (128, 240))       # rows x columns of the pipeline's wide tiles
# nvjet_sm90_<types>_<M>x<N>_<K step>x<stages>_<cluster M>x<cluster N>_...
NVJET = re.compile(r"nvjet_sm\d+_[a-z0-9]+_(\d+)x(\d+)_\d+x\d+_(\d+)x(\d+)_")


def tile_of(name: str) -> tuple[int, int, int, int] | None:
    """(rows, columns, cluster along rows, cluster along columns) of a tile of the
    row-major D, from an nvjet kernel's name (None for another kernel): the name's
    column-major M x N is D's columns x rows."""
    found = NVJET.search(name)
    if not found:
        return None
    tm, tn, cm, cn = (int(v) for v in found.groups())
    return tn, tm, cn, cm


def tiling(m: int, n: int, rows: int, columns: int, sms: int = SMS) -> tuple[int, float, int]:
    """(tiles, rounds over `sms` multiprocessors, elements of D a multiprocessor computes
    in whole rounds) of an m x n D cut into rows x columns tiles."""
    tiles = math.ceil(m / rows) * math.ceil(n / columns)
    return tiles, tiles / sms, math.ceil(tiles / sms) * rows * columns


def describe(m: int, n: int, rows: int, columns: int) -> str:
    tiles, rounds, per_sm = tiling(m, n, rows, columns)
    return f"{rows}x{columns} of D: {tiles} tiles, {rounds:.2f} rounds, {per_sm} a multiprocessor"


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


def report(label: str, found: list[tuple[str, float]], m: int, n: int) -> None:
    for name, us in found:
        print(f"{label:<28} {us:9.1f} us  {name}", flush=True)
        tile = tile_of(name)
        if tile:
            rows, columns, cr, cc = tile
            print(f"{'':<28} {'':>12} = {describe(m, n, rows, columns)}; clusters "
                  f"{cr}x{cc}", flush=True)


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
            report(f"{str(dtype)[6:]} {m}x{n}x{k}", kernels(torch, lambda: torch.matmul(a, b)),
                   m, n)
        for rows, columns in OUR_TILES:
            print(f"{'ours':<28} {'':>12}   {describe(m, n, rows, columns)}", flush=True)
    one = torch.ones((), device="cuda")
    for m, n, k in shapes(args.fp8_shapes):
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        report(f"e4m3 {m}x{n}x{k}", kernels(torch, lambda: torch._scaled_mm(
            a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), m, n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
