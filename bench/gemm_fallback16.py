"""Hardware checks of the 16-bit workgroup tensor_matmul's split regions on the warp MMA
(toolchain/compiler/targets/ptx/tensor/split_mma16.py, docs/reference/gemm.md "Split
regions"): f16/bf16 A/B whose leading dimension TMA and WMMA refuse (K = 4100 and others).

    python3 bench/gemm_fallback16.py --list
    python3 bench/gemm_fallback16.py --case NAME

Cases (each meant for its own process: tests/gpu/test_gemm_split16.py):
- exact-*: small exact values (every product and partial sum exact in f32), bit for bit
  against the float64 oracle rounded once, with D's padding poisoned, on the pipeline's
  launch (384 work-items and its shared memory: the run-time test fails on the leading
  dimension), on 256 work-items without shared memory and on 16 (a partial warp: exact
  replay), with leading dimensions/bases that pick each load width (16/8/4/2 bytes);
  the split results equal the replay's bit for bit;
- random-*: N(0, 1) data against the float64 oracle within the bound of f32 summation
  order (bench/gemm_fallback.f32_order_bound);
- epilogue-*: fused epilogues (gemm_hopper.check_epilogue; one persistent) at K = 4100;
- stress-*: 200 back-to-back launches of 5000 x 3000 x 4100, then the exact result.
The timed rows are bench/gemm_fallback.py's f16/bf16 rows.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import mettle  # noqa: E402
import gemm_hopper as H  # noqa: E402
from bench.gemm_fp8 import out_dtype as dtype  # noqa: E402
from gemm_fallback import (STRESS, bounded_forms, exact_forms,  # noqa: E402
                           f32_order_bound, mismatch, padding_untouched, poisoned_d,
                           replay_allowed)

EXACT = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -0.5, -1.0, -1.5, -2.0, -3.0)


def exact_operand(torch, fmt: str, rows: int, k: int, ld: int, seed: int, start: int = 0):
    """(rows x k view, from column `start`, of a rows x ld buffer of exact small values;
    float64 values)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    vals = torch.tensor(EXACT, device="cuda")
    buf = vals[torch.randint(0, len(EXACT), (rows, ld), device="cuda", generator=g)]
    view = buf.to(dtype(torch, fmt))[:, start:start + k]
    return view, view.double()


FORMS = {"pipeline": (None, None), "split256": (256, 0), "replay": (16, 0)}


def launch(g, a, bt, c, d, m, n, k, form: str, reps: int = 1) -> None:
    threads, shared = FORMS[form]
    run = g.launcher(a, bt, c, d, m, n, k, threads=threads, shared=shared)
    for _ in range(reps):
        run()


def exact_case(torch, m: int, n: int, k: int, fmt="f16", out="f32") -> int:
    """Bit for bit against the oracle on every launch form and load width."""
    g = H.Gemm(mettle.device(0), fmt, out=out)
    bad = 0
    pads = {"w16": -k % 8, "w8": (4 - k % 8) % 8, "w4": (2 - k % 4) % 4,
            "w2": 1 - k % 2, "w2 base+1": -k % 8 + 8}
    for width, pad in pads.items():
        start = 1 if "base" in width else 0       # A and B one element past the base
        forms = ("split256", "replay") if width == "w16" else tuple(FORMS)
        ld = k + pad                              # (w16: that launch would take TMA)
        a, av = exact_operand(torch, fmt, m, k, ld, m + k + pad, start)
        bt, bv = exact_operand(torch, fmt, n, k, ld, n + k + pad, start)
        gc = torch.Generator(device="cuda").manual_seed(k)
        c = torch.randint(-8, 8, (m, n), device="cuda", generator=gc).float()
        want = (c.double() + av @ bv.T).to(dtype(torch, out))

        def run(d, form):
            launch(g, a, bt, c, d, m, n, k, form)
            torch.cuda.synchronize()
        bad += exact_forms(torch, f"exact {fmt}->{out} {m}x{n}x{k} lda {a.stride(0)} ({width})",
                           replay_allowed(forms, m, n, k), run, want, out, m, n)
    return bad


def random_case(torch, m: int, n: int, k: int, fmt="f16", out="f32") -> int:
    g = H.Gemm(mettle.device(0), fmt, out=out)
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=gen).to(dtype(torch, fmt))
    bt = torch.randn(n, k, device="cuda", generator=gen).to(dtype(torch, fmt))
    c = torch.randn(m, n, device="cuda", generator=gen)
    av, bv = a.double(), bt.double()
    ref = c.double() + av @ bv.T
    bound = f32_order_bound(torch, 1.0, k, av.abs() @ bv.abs().T + c.double().abs(), ref,
                            out)

    def run(d, form):
        launch(g, a, bt, c, d, m, n, k, form)
        torch.cuda.synchronize()
    return bounded_forms(torch, f"random {fmt}->{out} {m}x{n}x{k}", ("pipeline", "split256"),
                         run, ref, bound, out, m, n)


def stress_case(torch, m=5000, n=3000, k=4100, fmt="bf16", out="bf16") -> int:
    """STRESS back-to-back launches on the pipeline's launch, then the exact result."""
    g = H.Gemm(mettle.device(0), fmt, out=out)
    a, av = exact_operand(torch, fmt, m, k, k, 1)
    bt, bv = exact_operand(torch, fmt, n, k, k, 2)
    c = torch.zeros(m, n, device="cuda")
    d, buf = poisoned_d(torch, out, m, n)
    launch(g, a, bt, c, d, m, n, k, "pipeline", reps=STRESS)
    torch.cuda.synchronize()
    want = (av @ bv.T).to(dtype(torch, out))
    ok = torch.equal(d, want) and padding_untouched(torch, buf, n)
    print(f"stress {fmt}->{out} {m}x{n}x{k} x{STRESS} back to back: "
          f"{'ok' if ok else 'FAILED ' + mismatch(torch, d, want, buf, n)}", flush=True)
    return not ok


def epilogue_case(torch, m: int, n: int, k: int, fmt: str, out: str, epilogue: str,
                  persistent: bool = False) -> int:
    """gemm_hopper.check_epilogue with lda = K + 8 (TMA refuses K = 4100 + 8): random data
    within the pipeline's tolerance; small integers bit for bit on the pipeline's launch
    and on 256 work-items, both split regions on the warp MMA."""
    g = H.Gemm(mettle.device(0), fmt, out=out, epilogue=epilogue, persistent=persistent)
    err, same = H.check_epilogue(torch, g, fmt, m, n, k)
    ok = err < H.TOLERANCE[out] and same
    print(f"epilogue {epilogue} {fmt}->{out} {m}x{n}x{k}{' persistent' if persistent else ''}:"
          f" rel err {err:.2e}, exact on both launches {same} {'ok' if ok else 'FAILED'}",
          flush=True)
    return not ok


CASES = {
    "exact-f16-f32-300x520x200": lambda t: exact_case(t, 300, 520, 200, "f16", "f32"),
    "exact-bf16-bf16-129x264x393": lambda t: exact_case(t, 129, 264, 393, "bf16", "bf16"),
    "exact-f16-f16-1000x1000x4100": lambda t: exact_case(t, 1000, 1000, 4100, "f16", "f16"),
    "random-f16-f32-1000x1000x4100": lambda t: random_case(t, 1000, 1000, 4100),
    "random-bf16-f32-5000x3000x4100": lambda t: random_case(t, 5000, 3000, 4100, "bf16"),
    "random-f16-bf16-300x520x203": lambda t: random_case(t, 300, 520, 203, "f16", "bf16"),
    "epilogue-f16-bf16-300x520x4100": lambda t: epilogue_case(
        t, 300, 520, 4100, "f16", "bf16", "matrix_bias_col"),
    "epilogue-bf16-f32-persistent-1000x1000x4100": lambda t: epilogue_case(
        t, 1000, 1000, 4100, "bf16", "f32", "col_bias_relu", persistent=True),
    "stress-5000x3000x4100": stress_case,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="", help="cases (comma-separated; default all)")
    ap.add_argument("--list", action="store_true", help="print the cases")
    args = ap.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")               # torch's (primary) context first
    names = [c for c in args.case.split(",") if c] or list(CASES)
    unknown = [c for c in names if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; --list names them")
    bad = sum(CASES[name](torch) for name in names)
    print("SPLIT16 CHECK", "FAILED" if bad else "OK", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
