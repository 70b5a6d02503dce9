"""FP8 GEMM benchmark and hardware check (a script, and bench/gemm.py's FP8 rows): Mettle's
FP8 workgroup tensor_matmul (docs/reference/gemm-fp8.md) against cuBLAS FP8 through
torch._scaled_mm with the same per-tensor scales.

    python3 bench/gemm_fp8.py [--check] [--no-bench] [--shapes MxNxK,...] [--reps 10]
                              [--formats e4m3,e5m2] [--out bf16,f32] [--json gemm_fp8.json]

Ours: D = sa*sb*(A*B) + C with A (M x K, E4M3 or E5M2) row-major and B (K x N, E4M3)
column-major (torch's b.t() of an N x K tensor, what _scaled_mm takes), f32 scales on the
device; C is one row of zeros read with ldc = 0 (no DRAM traffic), so the contract is
_scaled_mm's: D = sa*sb*(A*B) rounded once to `out`. `workgroup`: one 128x256 region per
workgroup; `persistent`: `persistent: 8` on min(tiles, 132) workgroups; `pingpong`: the
same with `schedule: pingpong` (--no-pingpong: left out); `auto`: with `schedule: auto`
(ping-pong when A's and B's rows start on 128-byte boundaries, else cooperative;
--no-auto: left out); `streamk` (--workspace): `auto` with a stream-K `workspace:` on
one workgroup per multiprocessor (launches of fewer tiles than workgroups split along
K; --check --forms streamk checks it). torch:
_scaled_mm(a, b, sa, sb, out_dtype) (cuBLAS; `torch_fast`: use_fast_accum=True, whose
accumulation is the tensor core's own, like ours). All contenders of a row are timed
interleaved in the same process (bench/timing.timed_together); TFLOP/s counts 2*M*N*K.
--check first runs exactness checks: small exact values (bench/fp8_kernels.exact_values)
on tails, ours against the float oracle bit for bit on the pipeline and on the split
replay (256 work-items), then random data against _scaled_mm, then 200 back-to-back
launches with the result checked after them (a hang shows as a timeout).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import mettle  # noqa: E402
from bench.fp8_kernels import BM, BN, exact_values, fp8_source, grid, native_launch  # noqa: E402
from gemm_hopper import zeroed_workspace  # noqa: E402
from timing import timed_together  # noqa: E402

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (16384, 1024, 4096),
          (5000, 3000, 4104))
CHECKS = ((128, 256, 128), (300, 520, 200), (129, 264, 392), (1000, 1000, 1008),
          (4096, 4096, 4096))
SMS = 132
TOLERANCE = {"f32": 1e-3, "f16": 2e-3, "bf16": 8e-3}     # vs cuBLAS's own summation order


class Fp8Gemm:
    """A compiled FP8 GEMM bound to torch tensors (carriers viewed as uint8)."""

    def __init__(self, a_fmt: str, b_fmt: str, out: str, persistent: bool = False,
                 schedule: str | None = None, workspace: bool = False):
        self.out, self.persistent, self.workspace = out, persistent, workspace
        self.module = mettle.compile(fp8_source(a_fmt, b_fmt, out, scaled=True,
                                                persistent=persistent, schedule=schedule,
                                                workspace=workspace),
                                     arch="sm_90a", cache=False)   # knobs: gemm_hopper
        self.threads, self.shared = native_launch(schedule=schedule or "cooperative")
        self.work = None                      # the stream-K workspace (SMS workgroups)

    def launcher(self, a, bt, c, d, sa, sb, m, n, k, ldc=None, threads=None, shared=None):
        u8 = lambda t: t.view(_torch().uint8)                             # noqa: E731
        dd = d if self.out == "f32" else d.view(_torch().uint16)
        args = (u8(a), u8(bt), c, dd, m, n, k, a.stride(0), bt.stride(0),
                c.stride(0) if ldc is None else ldc, d.stride(0), sa, sb)
        wgs = min(SMS, grid(m, n)) if self.persistent else grid(m, n)
        if self.workspace:                    # the parts need the idle multiprocessors
            wgs = SMS
            if self.work is None:
                self.work = zeroed_workspace(BM, BN, SMS)
            args += (self.work,)
        bound = self.module.gemm8[wgs, self.threads if threads is None else threads]
        sh = self.shared if shared is None else shared
        return lambda: bound(*args, shared=sh)


def _torch():
    import torch
    return torch


def torch_fp8(torch, fmt: str):
    return {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]


def out_dtype(torch, out: str):
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[out]


def check_exact(torch, g: Fp8Gemm, a_fmt, b_fmt, m, n, k, threads=None, shared=None) -> bool:
    """Small exact values, scales 0.5 and 4: ours == the float oracle, bit for bit."""
    import numpy as np
    rng = np.random.default_rng(m + n + k)
    ab, av = exact_values(rng, (m, k), a_fmt)
    bb, bv = exact_values(rng, (n, k), b_fmt)
    a = torch.from_numpy(ab).cuda()
    bt = torch.from_numpy(bb).cuda()
    sa = torch.tensor([0.5], device="cuda")
    sb = torch.tensor([4.0], device="cuda")
    c = torch.zeros(1, n, device="cuda")
    d = torch.full((m, n), float("nan"), device="cuda").to(out_dtype(torch, g.out))
    g.launcher(a, bt, c, d, sa, sb, m, n, k, ldc=0, threads=threads, shared=shared)()
    torch.cuda.synchronize()
    want = torch.from_numpy((av @ bv.T * 2.0).astype(np.float32)).cuda() \
        .to(out_dtype(torch, g.out))
    return torch.equal(d, want)


def _random(torch, a_fmt, b_fmt, m, n, k):
    a = (torch.randn(m, k, device="cuda") * 2).to(torch_fp8(torch, a_fmt))
    bt = (torch.randn(n, k, device="cuda") * 2).to(torch_fp8(torch, b_fmt))
    sa = torch.tensor([0.75], device="cuda")
    sb = torch.tensor([1.25], device="cuda")
    return a, bt, sa, sb


def scaled_mm(torch, a, bt, sa, sb, out: str, fast: bool = False):
    """cuBLAS FP8 through torch._scaled_mm, which wants K and N multiples of 16: odd shapes
    (5000x3000x4104, the checks' 300x520x200) are zero-padded, which leaves the product as it
    is, and the result cut back to M x N."""
    k, n = a.shape[1], bt.shape[0]
    pk, pn = -k % 16, -n % 16
    if pk or pn:
        pad = torch.nn.functional.pad
        a = pad(a.view(torch.uint8), (0, pk)).view(a.dtype)
        bt = pad(bt.view(torch.uint8), (0, pk, 0, pn)).view(bt.dtype)
    d = torch._scaled_mm(a, bt.t(), scale_a=sa, scale_b=sb,
                         out_dtype=out_dtype(torch, out), use_fast_accum=fast)
    return d[:, :n] if pn else d


def rel_err(d, ref) -> float:
    return ((d.float() - ref).norm() / ref.norm()).item()


def tolerance(torch, a, bt, sa, sb, out: str, ref) -> float:
    """The bound on ours against `ref` (_scaled_mm with its exact f32 promotion): the
    format's rounding bound, or twice the error of cuBLAS's own tensor-core accumulation
    (use_fast_accum=True: the FP8 wgmma adds products with fewer bits than f32, and so
    do ours; at K = 4096 with E5M2 inputs that alone reaches about 1e-3)."""
    fast = rel_err(scaled_mm(torch, a, bt, sa, sb, "f32", fast=True), ref)
    return max(TOLERANCE[out], 2.0 * fast)


FORMS = {"workgroup": (False, None), "persistent": (True, None),
         "pingpong": (True, "pingpong"), "auto": (True, "auto"),
         "streamk": (True, "auto", True)}    # -> (persistent, schedule[, workspace])


def check(torch, formats, outs, shapes=CHECKS, repeat: int = 200, pingpong: bool = False,
          forms=None, auto: bool = False) -> int:
    """`forms`: names of FORMS to check (default: workgroup and persistent, with
    `pingpong` and `auto` too)."""
    bad = 0
    forms = forms or ["workgroup", "persistent"] + (["pingpong"] if pingpong else []) + \
        (["auto"] if auto else [])
    for a_fmt in formats:
        for out in outs:
            for form in forms:
                g = Fp8Gemm(a_fmt, "e4m3", out, *FORMS[form])
                name = f"{a_fmt}xe4m3->{out} {form}"
                for m, n, k in shapes:
                    if m * n * k > 1 << 31:
                        continue
                    for label, th, sh in (("pipeline", None, None), ("split", 256, 0)):
                        if label == "split" and m * n * k > 1 << 27:
                            continue                               # replay is slow
                        ok = check_exact(torch, g, a_fmt, "e4m3", m, n, k, th, sh)
                        print(f"{name} {m}x{n}x{k} {label}: exact {ok}", flush=True)
                        bad += not ok
                for m, n, k in shapes:
                    a, bt, sa, sb = _random(torch, a_fmt, "e4m3", m, n, k)
                    c = torch.zeros(1, n, device="cuda")
                    d = torch.full((m, n), float("nan"), device="cuda") \
                        .to(out_dtype(torch, out))
                    run = g.launcher(a, bt, c, d, sa, sb, m, n, k, ldc=0)
                    for _ in range(repeat if (m, n, k) == shapes[-1] else 1):
                        run()
                    torch.cuda.synchronize()
                    ref = scaled_mm(torch, a, bt, sa, sb, "f32")
                    err, tol = rel_err(d, ref), tolerance(torch, a, bt, sa, sb, out, ref)
                    ok = err < tol
                    print(f"{name} {m}x{n}x{k} random vs _scaled_mm: rel err {err:.2e} "
                          f"(bound {tol:.2e}) {'ok' if ok else 'FAILED'}", flush=True)
                    bad += not ok
    print("FP8 CHECK", "FAILED" if bad else "OK", flush=True)
    return bad


def bench_shape(torch, gemms, a_fmt, out, m, n, k, reps) -> dict:
    a, bt, sa, sb = _random(torch, a_fmt, "e4m3", m, n, k)
    c = torch.zeros(1, n, device="cuda")
    d = torch.empty(m, n, device="cuda", dtype=out_dtype(torch, out))
    runs = {name: g.launcher(a, bt, c, d, sa, sb, m, n, k, ldc=0)
            for name, g in gemms.items()}
    ref = scaled_mm(torch, a, bt, sa, sb, "f32")
    tol = tolerance(torch, a, bt, sa, sb, out, ref)
    for name, run in runs.items():
        d.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        err = rel_err(d, ref)
        if not err < tol:
            raise SystemExit(f"fp8 {name} {a_fmt}->{out} {m}x{n}x{k}: differs from "
                             f"_scaled_mm (rel err {err})")
    runs["torch"] = lambda: scaled_mm(torch, a, bt, sa, sb, out)
    runs["torch_fast"] = lambda: scaled_mm(torch, a, bt, sa, sb, out, fast=True)
    flop = 2.0 * m * n * k
    row = {"dtype": f"{a_fmt}xe4m3", "out": out, "shape": f"{m}x{n}x{k}"}
    for name, ms in timed_together(torch, runs, reps).items():
        row[f"{name}_tflops"] = round(flop / ms / 1e9, 1)
    for name in gemms:
        row[f"{name}_ratio"] = round(row[f"{name}_tflops"] / row["torch_tflops"], 3)
    print(row, flush=True)
    return row


def bench(torch, formats, outs, shapes, reps, pingpong: bool = True,
          auto: bool = True, streamk: bool = False) -> list[dict]:
    rows = []
    for a_fmt in formats:
        for out in outs:
            names = ["workgroup", "persistent"] + (["pingpong"] if pingpong else []) + \
                (["auto"] if auto else []) + (["streamk"] if streamk else [])
            gemms = {name: Fp8Gemm(a_fmt, "e4m3", out, *FORMS[name]) for name in names}
            for shape in shapes:
                rows.append(bench_shape(torch, gemms, a_fmt, out, *shape, reps))
    return rows


def table(rows) -> str:
    head = (f"{'fp8 gemm':<30} {'mettle':>8} {'persist':>8} {'pingpong':>8} {'auto':>8} "
            f"{'streamk':>8} {'cuBLAS':>8} {'cuB.fast':>8} {'ratio':>6} {'r.pers':>6} "
            f"{'r.pp':>6} {'r.auto':>6} {'r.sk':>6}")
    lines = [head]

    def col(r, key, fmt):
        return format(r[key], fmt) if key in r else "-"
    for r in rows:
        lines.append(f"{r['dtype'] + '->' + r['out'] + ' ' + r['shape']:<30} "
                     f"{r['workgroup_tflops']:>8.1f} {r['persistent_tflops']:>8.1f} "
                     f"{col(r, 'pingpong_tflops', '.1f'):>8} "
                     f"{col(r, 'auto_tflops', '.1f'):>8} "
                     f"{col(r, 'streamk_tflops', '.1f'):>8} "
                     f"{r['torch_tflops']:>8.1f} {r['torch_fast_tflops']:>8.1f} "
                     f"{r['workgroup_ratio']:>6.3f} {r['persistent_ratio']:>6.3f} "
                     f"{col(r, 'pingpong_ratio', '.3f'):>6} "
                     f"{col(r, 'auto_ratio', '.3f'):>6} "
                     f"{col(r, 'streamk_ratio', '.3f'):>6}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--formats", default="e4m3", help="A's formats (B is E4M3)")
    ap.add_argument("--out", default="bf16", help="D formats")
    ap.add_argument("--json", default="gemm_fp8.json")
    ap.add_argument("--no-pingpong", action="store_true",
                    help="leave out the `schedule: pingpong` form")
    ap.add_argument("--forms", default="",
                    help="--check only these forms (workgroup,persistent,pingpong,auto,"
                    "streamk)")
    ap.add_argument("--no-auto", action="store_true",
                    help="leave out the `schedule: auto` form")
    ap.add_argument("--workspace", action="store_true",
                    help="also time `streamk`: `schedule: auto` with a stream-K "
                    "`workspace:` on one workgroup per multiprocessor")
    args = ap.parse_args()
    torch = _torch()
    torch.zeros(1, device="cuda")               # torch's (primary) context first
    formats, outs = args.formats.split(","), args.out.split(",")
    forms = [f for f in args.forms.split(",") if f]
    if args.check and check(torch, formats, outs, pingpong=not args.no_pingpong,
                            forms=forms, auto=not args.no_auto):
        return 1
    if args.no_bench:
        return 0
    shapes = SHAPES if not args.shapes else \
        [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    rows = bench(torch, formats, outs, shapes, args.reps, pingpong=not args.no_pingpong,
                 auto=not args.no_auto, streamk=args.workspace)
    print(f"device: {mettle.device(0).name}")
    print(table(rows))
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": mettle.device(0).name, "unit": "TFLOP/s", "results": rows}, fh,
                  indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
