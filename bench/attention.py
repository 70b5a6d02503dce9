"""Attention benchmark (a script, not a test): the Mettle example against torch SDPA.

    python3 bench/attention.py [--json bench/results/attention_h200.json] [--reps 5]
                               [--shapes b16h16n2048d64,...] [--dtypes f16,bf16]
                               [--no-check] [--timeout-ms 60000]

Contenders, in one process and on one device: `ours` (examples/attention: the tile-value
kernel through the `mettle` runtime, compiled -O for this GPU), `flash` (SDPA with
SDPBackend.FLASH_ATTENTION) and `cudnn` (SDPBackend.CUDNN_ATTENTION), f16 and bf16, full
and causal, on the shapes of the attention issue. Each configuration is first checked
against SDPA on float32 copies (FlashAttention's rule: max error <= 2x the 16-bit
reference's own error + its rounding noise), then timed with CUDA events, contenders
interleaved per round (bench/timing.timed_together), medians reported. TFLOP/s counts
4*b*h*n^2*d, halved for causal. The SM clock is sampled (nvidia-smi) around each shape.
Prints a table and writes JSON. Without a GPU or torch it says why and exits 0.

Tiles lower to the exact replay today (docs/reference/tiles.md "Targets"), so `ours` is
expected to be far below the SDPA backends until the register-resident sm_90a lowering
lands; a shape whose single call exceeds --timeout-ms is reported as skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

SHAPES = ("b16h16n2048d64", "b8h16n4096d128", "b2h16n16384d128")


def parse_shape(text: str) -> tuple[int, int, int, int]:
    b, rest = text[1:].split("h")
    h, rest = rest.split("n")
    n, d = rest.split("d")
    return int(b), int(h), int(n), int(d)


def sm_clock() -> int | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,"
                              "nounits"], capture_output=True, text=True, timeout=10).stdout
        return int(out.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def check(torch, F, ours, q, k, v, causal: bool) -> tuple[bool, float, float]:
    """FlashAttention's forward rule against float32 SDPA."""
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    pt = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
    out = ours(q, k, v, causal).float()
    atol = 2 * ((ref + 0.3 - 0.3).to(q.dtype).float() - ref).abs().max().item()
    err = (out - ref).abs().max().item()
    bound = 2 * (pt - ref).abs().max().item() + atol
    return err <= bound, err, bound


def slow_median(torch, fn) -> float:
    """Milliseconds: the median of three single CUDA-event-timed calls."""
    times = []
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results",
                                                   "attention_h200.json"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--timeout-ms", type=float, default=60000.0,
                    help="skip `ours` on a shape whose first call takes longer")
    ap.add_argument("--slow-ms", type=float, default=500.0,
                    help="a first call slower than this: time `ours` as the median of 3 "
                    "single calls instead of interleaved batches")
    args = ap.parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print(f"attention bench: torch unavailable ({e}); nothing to do")
        return 0
    if not torch.cuda.is_available():
        print("attention bench: no CUDA device; nothing to do")
        return 0
    from examples.attention.attention import attention
    from timing import timed_together

    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
    rows, header = [], f"{'shape':<18} {'dtype':<5} {'mask':<6} {'ours':>8} {'flash':>8} " \
        f"{'cudnn':>8} {'ours/flash':>10} {'ours/cudnn':>10}  check"
    print(header)
    for shape in args.shapes.split(","):
        b, h, n, d = parse_shape(shape)
        for dt in args.dtypes.split(","):
            gen = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtypes[dt], generator=gen)
                       for _ in range(3))
            for causal in (False, True):
                row = {"shape": shape, "dtype": dt, "causal": causal, "clock_before": sm_clock()}
                flops = 4 * b * h * n * n * d / (2 if causal else 1)
                ours = lambda q, k, v, c: attention(q, k, v, c)        # noqa: E731
                t0 = time.perf_counter()
                ours(q, k, v, causal)
                torch.cuda.synchronize()
                first_ms = (time.perf_counter() - t0) * 1e3
                if not args.no_check:
                    ok, err, bound = check(torch, F, ours, *(x[:1, :2] for x in (q, k, v)),
                                           causal)
                    row.update(check_ok=ok, max_err=err, bound=bound)
                fns, ms = {}, {}
                if first_ms > args.timeout_ms:
                    row["ours_skipped_first_call_ms"] = first_ms
                elif first_ms > args.slow_ms:
                    ms["ours"] = slow_median(torch, lambda: ours(q, k, v, causal))
                    row["ours_timing"] = "median of 3 single calls"
                else:
                    fns["ours"] = lambda: ours(q, k, v, causal)

                def sdpa(backend):
                    def run():
                        with sdpa_kernel(backend):
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    return run
                fns["flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
                fns["cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
                ms.update(timed_together(torch, fns, args.reps))
                ms = {name: ms[name] for name in ("ours", "flash", "cudnn") if name in ms}
                row.update({f"{k}_ms": v for k, v in ms.items()})
                row.update({f"{k}_tflops": flops / (v * 1e-3) / 1e12 for k, v in ms.items()})
                row["clock_after"] = sm_clock()
                rows.append(row)
                tf = lambda k: row.get(f"{k}_tflops")                      # noqa: E731
                cell = lambda x: f"{x:8.1f}" if x is not None else f"{'-':>8}"  # noqa: E731
                ratio = lambda a, c: f"{a / c:10.3f}" if a and c else f"{'-':>10}"  # noqa: E731
                print(f"{shape:<18} {dt:<5} {'causal' if causal else 'full':<6} "
                      f"{cell(tf('ours'))} {cell(tf('flash'))} {cell(tf('cudnn'))} "
                      f"{ratio(tf('ours'), tf('flash'))} {ratio(tf('ours'), tf('cudnn'))}  "
                      f"{row.get('check_ok', '-')}", flush=True)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "rows": rows}, f, indent=1)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
