"""GEMM shapes off the sm_90a pipelines' TMA rules (a script, and the hardware check of the
FP8 split regions on the warp MMA: docs/reference/gemm-fp8.md "Where it runs").

    python3 bench/gemm_fallback.py [--check] [--case NAME] [--list] [--no-bench]
                                   [--reps 5] [--json gemm_fallback.json]

A leading dimension of A or B that is not a multiple of 16 bytes (FP8 K = 4104 or 4100, f16
K = 4100) makes the workgroup tensor_matmul's run-time test refuse the TMA pipeline, so the
region is split into subgroup regions: FP8 ones on the warp MMA (fp8_split_mma.py), 16-bit
ones too (split_mma16.py; WMMA where its alignment test holds). bench/gemm_fallback16.py
has the 16-bit checks. Timed, interleaved in one process
(bench/timing.timed_together), TFLOP/s counting 2*M*N*K:
- FP8 E4M3 x E4M3 -> bf16, per-tensor scales, no C (one zero row, ldc = 0): `split`, ours
  with the pipeline's launch (384 work-items and its dynamic shared memory: the run-time
  test fails on the leading dimension); `split256`, ours on 256 work-items without shared
  memory; `torch`, torch._scaled_mm with K and N zero-padded to multiples of 16 as
  bench/gemm_fp8.scaled_mm does (the copies included: what a caller of cuBLAS pays);
  `cublas`, _scaled_mm on operands padded beforehand (cuBLAS alone); `cublas_fast`, the
  same with use_fast_accum;
- f16 or bf16 -> f32 with an f32 C: ours (bench/gemm_hopper.Gemm, the pipeline's launch)
  against torch.matmul(a, b) in f16/bf16 and torch.add(c, a @ b) (our contract);
- aligned f16 4096^3 on 256 work-items (split regions, no pipeline): the warp MMA
  (`split`) against the WMMA interiors (`wmma`) that aligned operands keep.
Each configuration is checked against torch before it is timed.

--check runs the exactness and stability cases (CASES; --case runs one, --list names
them): small exact FP8 values (every partial sum exact) on the split regions, bit for bit
against the float oracle with D's padding poisoned, on the pipeline's launch, on 256
work-items and on 16 (a partial warp: exact replay), with leading dimensions that pick
each load width (16/8/4 bytes, single bytes); random data against the float64 oracle
within the bound of f32 summation order alone; 200 back-to-back launches, then the result.
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
from bench.fp8_kernels import encode  # noqa: E402
from bench.gemm_fp8 import Fp8Gemm, out_dtype, scaled_mm, torch_fp8  # noqa: E402
from timing import timed_together  # noqa: E402

FP8_SHAPES = ((5000, 3000, 4104), (4096, 4096, 4104))
F16_SHAPES = (("f16", 4096, 4096, 4100), ("bf16", 4096, 4096, 4100),
              ("f16", 5000, 3000, 4100))
SA, SB = 0.5, 4.0                       # powers of two: s * S is exact
EXACT = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -0.5, -1.0, -1.5, -2.0, -3.0)
STRESS = 200
REPLAY_LIMIT = 1 << 28                  # M*N*K above which the 16-item replay is skipped


# ---------------------------------------------------------------- operands
def exact_operand(torch, fmt: str, rows: int, k: int, ld: int, seed: int, start: int = 0):
    """(rows x k view, from column `start`, of a rows x ld uint8 buffer of exact small FP8
    values; float64 values): every product and partial sum of a K <= 2^16 dot product is
    exact in f32."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    codes = torch.tensor([encode(fmt, v) for v in EXACT], dtype=torch.uint8, device="cuda")
    idx = torch.randint(0, len(EXACT), (rows, ld), device="cuda", generator=g)
    buf = codes[idx]
    view = buf[:, start:start + k]
    return view, decode(torch, fmt, view)


def random_operand(torch, fmt: str, rows: int, k: int, ld: int, seed: int):
    """Random N(0, 4) data rounded to `fmt` (as bench/gemm_fp8._random), in a padded
    buffer; (view, float64 values)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    buf = (torch.randn(rows, ld, device="cuda", generator=g) * 2).to(torch_fp8(torch, fmt))
    view = buf.view(torch.uint8)[:, :k]
    return view, decode(torch, fmt, view)


def decode(torch, fmt: str, codes):
    """Exact float64 values of FP8 bytes (every E4M3/E5M2 value is a float64 value)."""
    return codes.contiguous().view(torch_fp8(torch, fmt)).double()


def poisoned_d(torch, out: str, m: int, n: int):
    """(m x n view of an m x (n + 8) D whose every element is NaN, the whole buffer)."""
    buf = torch.full((m, n + 8), float("nan"), device="cuda").to(out_dtype(torch, out))
    return buf[:, :n], buf


def padding_untouched(torch, buf, n: int) -> bool:
    return bool(torch.isnan(buf[:, n:].float()).all())


def mismatch(torch, d, want, buf, n: int) -> str:
    """Where D differs (for the log of a failed check): count, first few (row, col, got,
    want), rows/columns touched, and whether the padding was written."""
    bad = (d.float() != want.float()) & ~(torch.isnan(d.float()) & torch.isnan(want.float()))
    where = bad.nonzero()
    first = [(int(r), int(c), float(d[r, c]), float(want[r, c])) for r, c in where[:4]]
    rows = sorted(set(int(r) for r in where[:, 0].unique()[:8])) if len(where) else []
    cols = sorted(set(int(c) for c in where[:, 1].unique()[:8])) if len(where) else []
    return (f"({len(where)} elements differ, first {first}, rows {rows}.., cols {cols}..; "
            f"padding untouched {padding_untouched(torch, buf, n)})")


def replay_allowed(forms, m: int, n: int, k: int) -> tuple:
    """`forms` without the 16-item replay when M*N*K is too large for it."""
    return tuple(f for f in forms if f != "replay" or m * n * k <= REPLAY_LIMIT)


def exact_forms(torch, label: str, forms, run, want, out: str, m: int, n: int) -> int:
    """Each form (`run(d, form)` computes D on it and synchronises) on a poisoned D: bit
    for bit equal to `want`, the padding untouched; with the replay among them, every
    form's bits equal the replay's. The number of failures."""
    results, bad = {}, 0
    for form in forms:
        d, buf = poisoned_d(torch, out, m, n)
        run(d, form)
        ok = torch.equal(d, want) and padding_untouched(torch, buf, n)
        results[form] = d
        print(f"{label} {form}: "
              f"{'ok' if ok else 'FAILED ' + mismatch(torch, d, want, buf, n)}", flush=True)
        bad += not ok
    if "replay" in results:
        same = all(torch.equal(results["replay"], v) for v in results.values())
        print(f"  split == replay bit for bit: {same}", flush=True)
        bad += not same
    return bad


def bounded_forms(torch, label: str, forms, run, ref, bound, out: str, m: int,
                  n: int) -> int:
    """Each form on a poisoned D within `bound` of the float64 `ref` everywhere, the
    padding untouched. The number of failures."""
    bad = 0
    for form in forms:
        d, buf = poisoned_d(torch, out, m, n)
        run(d, form)
        err = (d.double() - ref).abs()
        worst = (err / bound).max().item()
        ok = worst <= 1.0 and padding_untouched(torch, buf, n)
        rel = (err.norm() / ref.norm()).item()
        print(f"{label} {form}: rel err {rel:.2e}, worst error/bound {worst:.3f} "
              f"{'ok' if ok else 'FAILED'}", flush=True)
        bad += not ok
    return bad


# ---------------------------------------------------------------- checks
def launch(torch, g: Fp8Gemm, a, bt, d, m, n, k, form: str, reps: int = 1):
    """Ours on `form`: `pipeline` launch (384 items, its shared memory), `split256` (256
    items, none) or `replay` (16 items: a partial warp)."""
    sa = torch.tensor([SA], device="cuda")
    sb = torch.tensor([SB], device="cuda")
    c = torch.zeros(1, n, device="cuda")
    threads, shared = {"pipeline": (None, None), "split256": (256, 0),
                       "replay": (16, 0)}[form]
    run = g.launcher(a, bt, c, d, sa, sb, m, n, k, ldc=0, threads=threads, shared=shared)
    for _ in range(reps):
        run()
    torch.cuda.synchronize()


def exact_case(torch, m: int, n: int, k: int, a_fmt="e4m3", out="bf16") -> int:
    """Bit for bit against the oracle on every launch form and load width."""
    g = Fp8Gemm(a_fmt, "e4m3", out)
    bad = 0
    pads = {"w16": -k % 16, "w8": (8 - k % 16) % 16, "w4": (4 - k % 8) % 8, "w1": 1,
            "w1 base+1": -k % 16 + 16}
    for width, pad in pads.items():
        start = 1 if "base" in width else 0       # A and B one byte past an aligned base
        forms = ("split256", "replay") if width == "w16" else \
            ("pipeline", "split256", "replay")    # (w16: that launch would take TMA)
        ld = k + pad
        a, av = exact_operand(torch, a_fmt, m, k, ld, m + k + pad, start)
        bt, bv = exact_operand(torch, "e4m3", n, k, ld + (16 if width == "w16" else 0),
                               n + k + pad, start)
        want = (av @ bv.T * (SA * SB)).to(out_dtype(torch, out))
        bad += exact_forms(
            torch, f"exact {a_fmt}xe4m3->{out} {m}x{n}x{k} lda {ld} ({width})",
            replay_allowed(forms, m, n, k),
            lambda d, form: launch(torch, g, a, bt, d, m, n, k, form), want, out, m, n)
    return bad


def f32_order_bound(torch, s: float, k: int, abs_prod, ref, out: str):
    """|ours - ref| <= s*K*2^-23*sum|a||b| (any f32 summation order: K additions each off
    by at most one f32 ulp; sm_90's f16 MMA accumulates in f32) + 2^-23|ref| (the
    fma.rn with the scale) + one ulp of D's format at |ref| (its rounding, from a t that
    may lie on the other side of a rounding boundary)."""
    mant = {"f32": 23, "f16": 10, "bf16": 7}[out]
    floor_exp = {"f32": -126, "f16": -14, "bf16": -126}[out]
    cap = torch.cuda.get_device_capability(0)
    gamma = k * 2.0 ** -23 if cap == (9, 0) else k * 2.0 ** -13   # native FP8 MMA: fewer bits
    _, e = torch.frexp(ref.abs())
    ulp = torch.pow(2.0, (e - 1).clamp(min=floor_exp).double() - mant)
    return s * gamma * abs_prod + 2.0 ** -23 * ref.abs() + ulp


def random_case(torch, m: int, n: int, k: int, a_fmt="e4m3", out="bf16") -> int:
    g = Fp8Gemm(a_fmt, "e4m3", out)
    a, av = random_operand(torch, a_fmt, m, k, k, m)
    bt, bv = random_operand(torch, "e4m3", n, k, k, n)
    ref = av @ bv.T * (SA * SB)
    bound = f32_order_bound(torch, SA * SB, k, av.abs() @ bv.abs().T, ref, out)
    return bounded_forms(torch, f"random {a_fmt}xe4m3->{out} {m}x{n}x{k}",
                         ("pipeline", "split256"),
                         lambda d, form: launch(torch, g, a, bt, d, m, n, k, form),
                         ref, bound, out, m, n)


def stress_case(torch, m=5000, n=3000, k=4104) -> int:
    """STRESS back-to-back launches on the pipeline's launch, then the exact result."""
    g = Fp8Gemm("e4m3", "e4m3", "bf16")
    a, av = exact_operand(torch, "e4m3", m, k, k, 1)
    bt, bv = exact_operand(torch, "e4m3", n, k, k, 2)
    d, buf = poisoned_d(torch, "bf16", m, n)
    launch(torch, g, a, bt, d, m, n, k, "pipeline", reps=STRESS)
    want = (av @ bv.T * (SA * SB)).to(torch.bfloat16)
    ok = torch.equal(d, want) and padding_untouched(torch, buf, n)
    print(f"stress {m}x{n}x{k} x{STRESS} back to back: "
          f"{'ok' if ok else 'FAILED ' + mismatch(torch, d, want, buf, n)}", flush=True)
    return not ok


CASES = {
    "exact-300x520x200": lambda t: exact_case(t, 300, 520, 200),
    "exact-129x264x392": lambda t: exact_case(t, 129, 264, 392, "e5m2", "f32"),
    "exact-1000x1000x4100": lambda t: exact_case(t, 1000, 1000, 4100, "e4m3", "f16"),
    "exact-5000x3000x4104": lambda t: exact_case(t, 5000, 3000, 4104),
    "random-300x520x200": lambda t: random_case(t, 300, 520, 200, "e5m2", "f32"),
    "random-1000x1000x4100": lambda t: random_case(t, 1000, 1000, 4100),
    "random-5000x3000x4104": lambda t: random_case(t, 5000, 3000, 4104),
    "stress-5000x3000x4104": stress_case,
}


def check(torch, names) -> int:
    bad = sum(CASES[name](torch) for name in names)
    print("FALLBACK CHECK", "FAILED" if bad else "OK", flush=True)
    return bad


# ---------------------------------------------------------------- timing
def pick_reps(torch, fn, reps: int) -> int:
    """`reps`, or fewer when one call takes over 20 ms (a replayed fallback)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    start.record()
    fn()
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    return max(1, min(reps, int(100 / max(ms, 1e-3))))


def bench_fp8(torch, m: int, n: int, k: int, reps: int) -> dict:
    g = Fp8Gemm("e4m3", "e4m3", "bf16")
    a, av = random_operand(torch, "e4m3", m, k, k, m)
    bt, bv = random_operand(torch, "e4m3", n, k, k, n)
    sa = torch.tensor([SA], device="cuda")
    sb = torch.tensor([SB], device="cuda")
    c = torch.zeros(1, n, device="cuda")
    d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ref = av @ bv.T * (SA * SB)
    runs = {"split": g.launcher(a, bt, c, d, sa, sb, m, n, k, ldc=0),
            "split256": g.launcher(a, bt, c, d, sa, sb, m, n, k, ldc=0, threads=256,
                                   shared=0)}
    for name, run in runs.items():
        d.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        err = ((d.double() - ref).norm() / ref.norm()).item()
        if not err < 8e-3:
            raise SystemExit(f"fp8 {name} {m}x{n}x{k}: rel err {err} against the oracle")
    a8, b8 = a.view(torch_fp8(torch, "e4m3")), bt.view(torch_fp8(torch, "e4m3"))
    pad = torch.nn.functional.pad
    pk, pn = -k % 16, -n % 16
    ap = pad(a, (0, pk)).view(a8.dtype)
    bp = pad(bt, (0, pk, 0, pn)).view(b8.dtype)
    runs["torch"] = lambda: scaled_mm(torch, a8, b8, sa, sb, "bf16")
    runs["cublas"] = lambda: torch._scaled_mm(ap, bp.t(), scale_a=sa, scale_b=sb,
                                              out_dtype=torch.bfloat16)
    runs["cublas_fast"] = lambda: torch._scaled_mm(ap, bp.t(), scale_a=sa, scale_b=sb,
                                                   out_dtype=torch.bfloat16,
                                                   use_fast_accum=True)
    return _timed_row(torch, "e4m3xe4m3->bf16", m, n, k, runs, reps)


def bench_f16(torch, fmt: str, m: int, n: int, k: int, reps: int) -> dict:
    import gemm_hopper as H
    g = H.Gemm(mettle.device(0), fmt, out="f32")
    ty = torch.float16 if fmt == "f16" else torch.bfloat16
    a = torch.randn(m, k, device="cuda").to(ty)
    bt = torch.randn(n, k, device="cuda").to(ty)
    c = torch.randn(m, n, device="cuda")
    d = torch.empty(m, n, device="cuda")
    ref = c + a.float() @ bt.float().t()
    run = g.launcher(a, bt, c, d, m, n, k)
    d.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    err = ((d - ref).norm() / ref.norm()).item()
    if not err < H.TOLERANCE["f32"]:
        raise SystemExit(f"{fmt} {m}x{n}x{k}: rel err {err} against torch")
    b = bt.t()
    dc = torch.empty_like(c)
    runs = {"split": run, "torch": lambda: torch.matmul(a, b),
            "torch_c": lambda: torch.add(c, torch.matmul(a, b), out=dc)}
    return _timed_row(torch, f"{fmt}->f32 +C", m, n, k, runs, reps)


def bench_split_forms(torch, m: int, n: int, k: int, reps: int) -> dict:
    """Aligned f16 operands on 256 work-items (no pipeline): the split regions' WMMA
    interiors (`wmma`: ldd = n) against the warp MMA (`split`: ldd = n + 1, which only
    WMMA's alignment test reads), the same GEMM otherwise."""
    import gemm_hopper as H
    g = H.Gemm(mettle.device(0), "f16", out="f32")
    a = torch.randn(m, k, device="cuda").half()
    bt = torch.randn(n, k, device="cuda").half()
    c = torch.randn(m, n, device="cuda")
    ref = c + a.float() @ bt.float().t()
    runs = {}
    for name, pad in (("split", 1), ("wmma", 0)):
        d = torch.empty(m, n + pad, device="cuda")[:, :n]
        runs[name] = g.launcher(a, bt, c, d, m, n, k, threads=256, shared=0)
        d.fill_(float("nan"))
        runs[name]()
        torch.cuda.synchronize()
        err = ((d - ref).norm() / ref.norm()).item()
        if not err < H.TOLERANCE["f32"]:
            raise SystemExit(f"{name} {m}x{n}x{k}: rel err {err} against torch")
    b = bt.t()
    runs["torch"] = lambda: torch.matmul(a, b)
    return _timed_row(torch, "f16->f32 256 items, mma/wmma", m, n, k, runs, reps)


def _timed_row(torch, kind, m, n, k, runs, reps) -> dict:
    reps = min(pick_reps(torch, fn, reps) for fn in runs.values())
    flop = 2.0 * m * n * k
    row = {"kind": kind, "shape": f"{m}x{n}x{k}", "reps": reps}
    for name, ms in timed_together(torch, runs, reps, rounds=3).items():
        row[f"{name}_tflops"] = round(flop / ms / 1e9, 1)
    row["ratio"] = round(row["split_tflops"] / row["torch_tflops"], 3)
    print(row, flush=True)
    return row


def table(rows) -> str:
    names = []
    for r in rows:
        names += [k[:-7] for k in r if k.endswith("_tflops") and k[:-7] not in names]
    lines = [f"{'fallback gemm (TFLOP/s)':<34}" + "".join(f"{x:>12}" for x in names) +
             f"{'ratio':>8}"]
    for r in rows:
        lines.append(f"{r['kind'] + ' ' + r['shape']:<34}" + "".join(
            f"{r[x + '_tflops']:>12.1f}" if x + "_tflops" in r else f"{'-':>12}"
            for x in names) + f"{r['ratio']:>8.3f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--case", default="", help="check cases (comma-separated; default all)")
    ap.add_argument("--list", action="store_true", help="print the check cases")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default="gemm_fallback.json")
    args = ap.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")               # torch's (primary) context first
    if args.check:
        names = [c for c in args.case.split(",") if c] or list(CASES)
        unknown = [c for c in names if c not in CASES]
        if unknown:
            raise SystemExit(f"unknown case(s) {unknown}; --list names them")
        if check(torch, names):
            return 1
    if args.no_bench:
        return 0
    rows = []
    for bench_row, shapes in ((bench_fp8, FP8_SHAPES), (bench_f16, F16_SHAPES),
                              (bench_split_forms, ((4096, 4096, 4096),))):
        for shape in shapes:
            try:                          # one failing row must not lose the others
                rows.append(bench_row(torch, *shape, args.reps))
            except (Exception, SystemExit) as e:   # noqa: BLE001 (reported, then on)
                print(f"{bench_row.__name__} {shape}: FAILED {type(e).__name__}: {e}",
                      flush=True)
    print(f"device: {mettle.device(0).name}")
    print(table(rows))
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": mettle.device(0).name, "unit": "TFLOP/s", "results": rows}, fh,
                  indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
