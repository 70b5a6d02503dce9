"""GPU kernel benchmark (a script, not a test): our kernels against torch, same process.

    python3 bench/gpu_kernels.py [--json gpu_kernels.json] [--reps 50]

Kernels are compiled in process by the Python runtime (`mettle`) for the local GPU and
launched typed on torch's tensors, in the primary context torch uses; both sides are
timed with CUDA events over `--reps` launches after warm-up (median of 5 batches; the row
problems time our kernels and the peers in interleaved rounds, twice in opposite orders). GB/s
counts the bytes each kernel must move (read once + written once). Each result is checked
against torch before it is timed.
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
from timing import timed, timed_together  # noqa: E402

SUITE = os.path.join(ROOT, "tests", "data", "gpu_suite")
KERNELS = os.path.join(ROOT, "tests", "data", "kernels")


def local_arch() -> str:
    """The --gpu-arch of CUDA device 0 (sm_90a on an H200)."""
    major, minor = mettle.device(0).compute_capability
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


def bench_vadd(torch, mods, n, reps):
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    rows = []
    for name, fn_name, per_thread in (("vadd (1 elem/thread)", "vadd", 1),
                                      ("vadd4 (128-bit)", "vadd4", 4)):
        grid = (n + 256 * per_thread - 1) // (256 * per_thread)
        bound = mods[fn_name][fn_name][grid, 256]
        launch = lambda: bound(a, b, c, n)
        c.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        assert torch.equal(c, a + b), f"{name} result differs from torch"
        rows.append((name, timed(torch, launch, reps), 12 * n))
    rows.append(("torch a + b", timed(torch, lambda: torch.add(a, b, out=c), reps), 12 * n))
    return rows


def wide_threads(cols: int) -> int:
    """Work-items per row for rows.mettle's wide kernels: the narrowest of 64/128/256 that
    holds the row in registers (16 values each), else 256 (bench/tuned_row_variants.py)."""
    return next((t for t in (64, 128) if cols <= 16 * t), 256)


def peer_launchers(torch, kind, x, gamma, beta) -> dict:
    """torch eager, torch.compile and Triton callables for one row problem (where present)."""
    cols = x.shape[1]
    eager = (lambda: torch.softmax(x, dim=1)) if kind == "softmax" else \
        (lambda: torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5))
    fns = {"torch": eager}
    try:
        compiled = torch.compile(eager)
        compiled()
        fns["torch.compile"] = compiled
    except Exception as exc:                      # noqa: BLE001 - a peer may be missing
        print(f"# torch.compile {kind}: unavailable ({type(exc).__name__}: {exc})")
    try:
        import triton_peers
        fns["triton"] = triton_peers.launcher(torch, kind, x, gamma, beta)
    except Exception as exc:                      # noqa: BLE001
        print(f"# triton {kind}: unavailable ({type(exc).__name__}: {exc})")
    return fns


def bench_rows(torch, mods, rows_n, cols, reps):
    """Our two row kernels per problem and the peers, checked, then timed in interleaved
    rounds twice in opposite orders (a clock change reaches every contender alike)."""
    x = torch.randn(rows_n, cols, device="cuda")
    y = torch.empty_like(x)
    gamma, beta = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    shape = [rows_n, cols, cols, cols]
    threads = wide_threads(cols)
    refs = {"softmax": torch.softmax(x, dim=1),
            "layernorm": torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5)}
    out = []
    for kind, tol in (("softmax", dict(rtol=2e-5, atol=1e-6)),
                      ("layernorm", dict(rtol=1e-4, atol=1e-4))):
        argv = [x, y] + ([] if kind == "softmax" else [gamma, beta]) + \
            shape + ([] if kind == "softmax" else [1e-5])
        rows_fn = mods["rows"][f"{kind}_rows"][(rows_n + 3) // 4, 128]
        wide_fn = mods["rows"][f"{kind}_wide"][rows_n, threads]
        ours = {kind: lambda: rows_fn(*argv), f"{kind}_wide": lambda: wide_fn(*argv)}
        for fn in ours.values():
            y.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            torch.testing.assert_close(y, refs[kind], **tol)
        fns = {**ours, **{f"{peer} {kind}": fn
                          for peer, fn in peer_launchers(torch, kind, x, gamma, beta).items()}}
        first = timed_together(torch, fns, reps)
        second = timed_together(torch, dict(reversed(list(fns.items()))), reps)
        for name in fns:
            out.append((f"{name} {rows_n}x{cols}", (first[name] + second[name]) / 2,
                        8 * x.numel()))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="gpu_kernels.json")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    import torch
    torch.zeros(1, device="cuda")               # create torch's (primary) context first
    dev = mettle.device(0)
    arch = local_arch()
    mods = {"vadd": mettle.compile(os.path.join(KERNELS, "vadd.mettle"), arch),
            "vadd4": mettle.compile(os.path.join(SUITE, "vadd4.mettle"), arch),
            "rows": mettle.compile(os.path.join(SUITE, "rows.mettle"), arch)}
    results = bench_vadd(torch, mods, 1 << 26, args.reps)
    for cols in (1024, 4096):
        results += bench_rows(torch, mods, 65536 if cols == 1024 else 16384, cols, args.reps)
    table = []
    print(f"device: {dev.name} ({arch})")
    print(f"{'kernel':<34} {'ms':>9} {'GB/s':>9}")
    for name, ms, nbytes in results:
        gbs = nbytes / ms / 1e6
        table.append({"kernel": name, "ms": round(ms, 5), "gb_per_s": round(gbs, 1)})
        print(f"{name:<34} {ms:>9.4f} {gbs:>9.1f}")
    by = {r["kernel"]: r["gb_per_s"] for r in table}
    ratios = {"vadd_vs_torch": by["vadd (1 elem/thread)"] / by["torch a + b"],
              "vadd4_vs_torch": by["vadd4 (128-bit)"] / by["torch a + b"]}
    for cols, rows_n in ((1024, 65536), (4096, 16384)):
        for k in ("softmax", "layernorm"):
            ratios[f"{k}_{cols}_vs_torch"] = by[f"{k} {rows_n}x{cols}"] / \
                by[f"torch {k} {rows_n}x{cols}"]
        for k in ("softmax", "layernorm"):
            ratios[f"{k}_wide_{cols}_vs_torch"] = by[f"{k}_wide {rows_n}x{cols}"] / \
                by[f"torch {k} {rows_n}x{cols}"]
        for k in ("softmax", "layernorm"):       # our best kernel per shape vs each peer
            best = max(by[f"{k} {rows_n}x{cols}"], by[f"{k}_wide {rows_n}x{cols}"])
            for peer in ("triton", "torch.compile"):
                key = f"{peer} {k} {rows_n}x{cols}"
                if key in by:
                    ratios[f"{k}_best_{cols}_vs_{peer}"] = best / by[key]
    for k, v in ratios.items():
        print(f"{k:<34} {v:>9.3f}")
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": dev.name, "arch": arch, "results": table, "ratios": ratios},
                  fh, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
