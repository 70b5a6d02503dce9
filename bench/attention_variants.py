"""Tuning experiments on the attention example (a script, not a test): source variants timed
side by side with SDPA's flash backend, in one process.

    python3 bench/attention_variants.py --variant bm128 \\
        --variant bm64 BLOCK_M=64 --variant bm64-mma BLOCK_M=64 tile_wgmma=0 \\
        [--shapes b16h16n2048d64,...] [--json OUT.json] [--dry-run]

Each `--variant NAME [SETTING...]` is the example compiled with its SETTINGs: an upper-case
NAME=VALUE is a `--const` of examples/attention/attention.mettle (BLOCK_M, BLOCK_N,
WORK_ITEMS, ...; the work-items follow BLOCK_M unless WORK_ITEMS is given), a lower-case
one a `mettle.compile` option (0/1 for booleans), except `artifact=PATH`: a module built
elsewhere (`mettle --emit-ptx --emit-signature PATH.sig.json`, `{d}` in PATH standing for
the head dimension), e.g. by an earlier compiler to time against. Every variant runs
through the example's
launcher (its grid from the variant's consts, its block from the compiled signature), is
checked first on two heads against SDPA in float32 with the example's rule
(examples/attention/check_attention.py), then all are timed in interleaved rounds
(bench/timing.timed_together) with flash; the table gives TFLOP/s (4*b*h*n^2*d, halved for
causal) and each variant's ratio to flash. --dry-run compiles every variant for sm_90a and
prints ptxas's register report; no GPU or torch needed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

# bench/attention.py, a sibling script (on sys.path above)
from attention import (SHAPES, flops, parse_shape, ptxas_report,  # noqa: E402
                       sdpa_or_reason)  # pants: no-infer-dep


def parse_variant(words: list[str]) -> tuple[str, dict, dict]:
    """(name, consts, options) of one --variant."""
    name, consts, options = words[0], {}, {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if not eq or not key:
            raise ValueError(f"--variant {name}: {w!r} is not NAME=VALUE")
        if key.isupper():
            consts[key] = int(value) if value.lstrip("-").isdigit() else value
        else:
            options[key] = bool(int(value)) if value in ("0", "1") else value
    return name, consts, options


def preload_artifacts(variants, shapes) -> None:
    """Variants with `artifact=PATH` get their modules from PATH (mettle.load) in the
    example launcher's cache, under the key its `module()` looks up."""
    import mettle
    from examples.attention import attention as A
    for name, consts, options in variants:
        if "artifact" not in options:
            continue
        for d in sorted({parse_shape(s)[3] for s in shapes}):
            key = (d, "f16", None, tuple(sorted(consts.items())),
                   tuple(sorted(options.items())))
            A._modules[key] = mettle.load(options["artifact"].format(d=d))


def dry_run(variants, shapes) -> int:
    from examples.attention.attention import module
    ptxas = os.environ.get("METTLE_PTXAS") or shutil.which("ptxas")
    failed = 0
    for d in sorted({parse_shape(s)[3] for s in shapes}):
        for name, consts, options in variants:
            if "artifact" in options:
                path = options["artifact"].format(d=d)
                with open(path, encoding="utf-8") as f:
                    ptx = f.read()
                line = f"{name} d{d}: {path}"
            else:
                mod = module(d, "f16", "sm_90a", consts=consts, options=options)
                ptx = mod.ptx
                line = f"{name} d{d}: block {mod.signature.kernels['attention'].block}"
            if ptxas:
                ok, report = ptxas_report(ptxas, ptx)
                failed += not ok
                line += f"; ptxas {report}"
            print(line)
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", nargs="+", action="append", metavar="NAME [SETTING]",
                    help="a variant: its name, then NAME=VALUE consts and options")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10, help="calls per timed batch")
    ap.add_argument("--json", default="attention_variants.json")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    try:
        variants = [parse_variant(v) for v in args.variant or [["default"]]]
    except ValueError as e:
        ap.error(str(e))
    shapes = [s for s in args.shapes.split(",") if s]
    if args.dry_run:
        return dry_run(variants, shapes)
    found = sdpa_or_reason()
    if isinstance(found, str):
        print(f"attention variants: {found}; nothing to do")
        return 0
    torch, F, SDPBackend, sdpa_kernel = found
    torch.zeros(1, device="cuda")       # torch first: mettle joins its primary context
    preload_artifacts(variants, shapes)
    from examples.attention.attention import attention
    from examples.attention.check_attention import Checker
    from timing import timed_together  # pants: no-infer-dep
    checker = Checker()
    names = [v[0] for v in variants]
    print(f"{'shape':<18} {'mask':<6}" + "".join(f"{n:>10}" for n in names) +
          f"{'flash':>10}" + "".join(f"{n + '/fl':>10}" for n in names) + "  check",
          flush=True)
    rows = []
    for shape in shapes:
        b, h, n, d = parse_shape(shape)
        gen = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=gen)
                   for _ in range(3))
        o = torch.empty_like(q)
        for causal in (False, True):
            fns, checks = {}, {}
            for name, consts, options in variants:
                def run(consts=consts, options=options, causal=causal, x=(q, k, v), o=o):
                    return attention(*x, causal, out=o, consts=consts, options=options)
                sl = [x[:1, :2] for x in (q, k, v)]
                checks[name] = checker.rule(*sl, causal, None, attention(
                    *sl, causal, consts=consts, options=options))[0]
                fns[name] = run

            def flash(causal=causal, x=(q, k, v)):
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    return F.scaled_dot_product_attention(*x, is_causal=causal)
            fns["flash"] = flash
            ms = timed_together(torch, fns, args.reps, args.rounds)
            tf = {x: flops(b, h, n, d, causal) / (ms[x] * 1e-3) / 1e12 for x in fns}
            rows.append({"shape": shape, "causal": causal, "tflops": tf, "check_ok": checks})
            print(f"{shape:<18} {'causal' if causal else 'full':<6}" +
                  "".join(f"{tf[x]:10.1f}" for x in names) + f"{tf['flash']:10.1f}" +
                  "".join(f"{tf[x] / tf['flash']:10.3f}" for x in names) + "  " +
                  "/".join(str(checks[x]) for x in names), flush=True)
        del q, k, v, o
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "unit": "TFLOP/s",
                   "variants": {n: {"consts": c, "options": o} for n, c, o in variants},
                   "rows": rows}, f, indent=1)
    print(f"wrote {args.json}")
    return 0 if all(all(r["check_ok"].values()) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
