"""Tuned row kernels against Triton: cache-policy, register-cap and launch-shape variants
(a tuning script, not a test).

    python3 bench/tuned_row_variants.py [--reps N] [--json out.json]   # on the GPU machine

Why: at 1024 columns rows.mettle's softmax_rows and layernorm_rows (one subgroup per row,
the row in registers) ran at 0.97x / 0.98x Triton's one-program-per-row kernels in
bench/gpu_kernels.py, while at 4096 columns they match it. The variants are text edits of
the committed `-O` PTX of the two kernels (so any gain can be traced to one cause) and
source edits of the launch shape:

  ldcs        the row's loads (the in-register path reads x once) ld.global.cs
  ldnc        the row's loads through the non-coherent path, ld.global.nc.L1::no_allocate
  stcs        the row's stores st.global.cs (evict-first: the output is not read again)
  maxnreg=N   `.maxnreg N` on the entry (more resident warps; checked for spills)
  rpb=N       N rows (subgroups) per block instead of 4
  gb-early    layernorm_wide loads gamma and beta beside the row (before the statistics)
  wide/B      softmax_wide / layernorm_wide (one workgroup per row, the row in registers,
              statistics combined through workgroup memory) launched B work-items wide
              (B=128 is the shape of Triton's kernel at 1024 columns)

Each variant is checked against torch first, then every variant, Triton and torch.compile
are timed in interleaved rounds (bench/timing.timed_together), twice in opposite orders, so a
clock change reaches every contender alike. Prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from launching import compile_module, local_arch, with_ptx  # noqa: E402

SOURCE = os.path.join(ROOT, "tests", "data", "gpu_suite", "rows.mettle")
KERNELS = ("softmax_rows", "layernorm_rows")
VARIANTS = (
    ("base", (), 4), ("ldcs", ("ldcs",), 4), ("stcs", ("stcs",), 4),
    ("ldcs+stcs", ("ldcs", "stcs"), 4), ("ldnc", ("ldnc",), 4),
    ("ldnc+stcs", ("ldnc", "stcs"), 4), ("maxnreg=56", ("maxnreg=56",), 4),
    ("maxnreg=48", ("maxnreg=48",), 4), ("rpb=2", (), 2), ("rpb=8", (), 8),
    ("rpb=2+ldcs+stcs", ("ldcs", "stcs"), 2), ("rpb=1", (), 1),
    ("wide/256", (), "wide256"), ("wide/128", (), "wide128"), ("wide/64", (), "wide64"),
    ("wide/64 gb-early", (), "wide64gb"), ("wide/256 gb-early", (), "wide256gb"),
)
ROW_LOADS = 8            # the in-register path's loads of x come first in each entry


def source(rows_per_block) -> str:
    text = open(SOURCE, encoding="utf-8").read()
    if isinstance(rows_per_block, str):   # "wideB": the wide kernels launched B wide
        return gamma_beta_early(text) if rows_per_block.endswith("gb") else text
    for k in KERNELS:
        text = text.replace(f"kernel(block = 128) {k}",
                            f"kernel(block = {32 * rows_per_block}) {k}")
    old = "var row: int32 = (int32)(block.x * 4 + thread.x / 32);"
    assert text.count(old) == 2
    return text.replace(old, f"var row: int32 = (int32)(block.x * {rows_per_block} + "
                             "thread.x / 32);")


def gamma_beta_early(text: str) -> str:
    """layernorm_wide loading its gamma and beta chunks right after the row's, so their
    latency overlaps the statistics and the barrier instead of following them."""
    a = text.index("kernel layernorm_wide(")
    b = text.index("\n}\n", a)
    body = text[a:b]
    edits = (
        ("  private var g: float32[4];\n  private var b: float32[4];\n",
         "  private var g: float32[16];\n  private var b: float32[16];\n"),
        ("        if (c < cols) { load4_f32(&xr[c], &v[4 * k]); }\n      }\n",
         "        if (c < cols) {\n          load4_f32(&xr[c], &v[4 * k]);\n"
         "          load4_f32(&gamma[c], &g[4 * k]);\n          load4_f32(&beta[c], &b[4 * k]);\n"
         "        }\n      }\n"),
        ("          load4_f32(&gamma[c], &g[0]);\n          load4_f32(&beta[c], &b[0]);\n", ""),
        ("rstd * g[j] + b[j]", "rstd * g[4 * k + j] + b[4 * k + j]"),
    )
    for old, new in edits:
        assert body.count(old) == 1, old
        body = body.replace(old, new)
    return text[:a] + body + text[b:]


def _edit_entry(ptx: str, name: str, edits) -> str:
    start = ptx.index(f".entry {name}(")
    end = ptx.index("\n}\n", start)
    body = ptx[start:end]
    for e in edits:
        if e in ("ldcs", "ldnc"):
            new = "ld.global.cs.v4.f32" if e == "ldcs" else "ld.global.nc.L1::no_allocate.v4.f32"
            count = [0]

            def first(m, new=new, count=count):
                count[0] += 1
                return new if count[0] <= ROW_LOADS else m.group(0)
            body = re.sub(r"ld\.global\.v4\.f32", first, body)
            assert count[0] >= ROW_LOADS, (name, e)
        elif e == "stcs":
            body = body.replace("st.global.v4.f32", "st.global.cs.v4.f32")
        elif e.startswith("maxnreg="):
            head = body.index("\n{")
            body = body[:head] + f"\n.maxnreg {e.split('=')[1]}" + body[head:]
        else:
            raise ValueError(e)
    return ptx[:start] + body + ptx[end:]


def variants(arch: str, only=None) -> dict:
    """name -> (module, rows per block): the source compiled with -O once per launch shape,
    its PTX edited per variant (the kernels' signatures stay the compile's)."""
    out, by_rpb = {}, {}
    for name, edits, rpb in VARIANTS:
        if only and name not in only:
            continue
        if rpb not in by_rpb:
            by_rpb[rpb] = compile_module("rows.mettle", arch, text=source(rpb), optimize=True)
        ptx = by_rpb[rpb].ptx
        for k in (KERNELS if isinstance(rpb, int) else ()):
            ptx = _edit_entry(ptx, k, edits)
        out[name] = (with_ptx(by_rpb[rpb], ptx, name), rpb)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--json", default="tuned_row_variants.json")
    ap.add_argument("--emit", help="(no GPU) write the variants' PTX to this folder and stop")
    ap.add_argument("--only", help="comma-separated variant names (default: all)")
    args = ap.parse_args()
    if args.emit:
        os.makedirs(args.emit, exist_ok=True)
        for name, (module, _) in variants("sm_90a").items():
            with open(os.path.join(args.emit, re.sub(r"\W", "_", name) + ".ptx"), "w") as fh:
                fh.write(module.ptx)
        return 0
    import torch
    from gpu_kernels import peer_launchers
    from timing import timed_together

    import mettle
    torch.zeros(1, device="cuda")
    dev = mettle.device(0)
    arch = local_arch()
    only = set(args.only.split(",")) if args.only else None
    mods = variants(arch, only)
    report = {"device": dev.name, "arch": arch, "rows": []}
    for rows_n, cols in ((65536, 1024), (16384, 4096)):
        x = torch.randn(rows_n, cols, device="cuda")
        y = torch.empty_like(x)
        gamma, beta = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
        refs = {"softmax_rows": torch.softmax(x, dim=1),
                "layernorm_rows": torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5)}
        for kernel, kind in zip(KERNELS, ("softmax", "layernorm")):
            fns = {}
            for name, (mod, rpb) in mods.items():
                if isinstance(rpb, int):
                    fn = mod[kernel]
                    grid, block = (rows_n + rpb - 1) // rpb, 32 * rpb
                else:
                    fn = mod[kernel.replace("_rows", "_wide")]
                    grid, block = rows_n, int(rpb[4:].rstrip("gb"))
                tail = [rows_n, cols, cols, cols]
                argv = ([x, y] + tail if kind == "softmax" else
                        [x, y, gamma, beta] + tail + [1e-5])
                fns[name] = (lambda bound=fn[grid, block], argv=argv: bound(*argv))
                y.fill_(float("nan"))
                fns[name]()
                torch.cuda.synchronize()
                torch.testing.assert_close(y, refs[kernel], rtol=1e-4, atol=1e-4)
            fns.update((name, fn) for name, fn in
                       peer_launchers(torch, kind, x, gamma, beta).items() if name != "torch")
            nbytes = 8 * x.numel()
            first = timed_together(torch, fns, args.reps)
            second = timed_together(torch, dict(reversed(list(fns.items()))), args.reps)
            for name in fns:
                gbs = [nbytes / ms / 1e6 for ms in (first[name], second[name])]
                report["rows"].append({"kernel": kind, "shape": f"{rows_n}x{cols}",
                                       "variant": name, "gb_per_s": [round(g, 1) for g in gbs]})
    tri = {(r["kernel"], r["shape"]): sum(r["gb_per_s"]) / 2 for r in report["rows"]
           if r["variant"] == "triton"}
    print(f"{'kernel':<10} {'shape':<11} {'variant':<18} {'GB/s 1':>8} {'GB/s 2':>8} "
          f"{'vs triton':>9}")
    for r in report["rows"]:
        ratio = sum(r["gb_per_s"]) / 2 / tri[(r["kernel"], r["shape"])]
        r["vs_triton"] = round(ratio, 3)
        print(f"{r['kernel']:<10} {r['shape']:<11} {r['variant']:<18} {r['gb_per_s'][0]:>8.1f} "
              f"{r['gb_per_s'][1]:>8.1f} {ratio:>9.3f}")
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
