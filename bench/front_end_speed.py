"""Front-end and emitter speed (a script, not a test): the in-process phases that the
suite used to time with wall-clock assertions, which flaked on a loaded machine.

    python3 bench/front_end_speed.py [--runs 5] [--json out.json]

Rows, each the best of --runs after one warm-up run, beside the budget it is held to
(docs/reference/gpu.md promises a few milliseconds per 200-line kernel file):

- lex: `tokenize` of 200 lines of typical statements;
- parse: `parse_source` of a 200-line file of 40 kernels;
- spirv: `emit_spirv` of bench/kernels/typical200.mettle's IR (the emitter alone);
- ptx 200 / ptx 800: `emit_ptx` of a straight-line kernel of 200 and 800 source lines
  built through `ir.Builder`, and their ratio (4x the input: about 4 when emission is
  linear; the budget allows 12).

Prints a table and, with --json, writes the rows ({name, ms, budget_ms, within}). Exit
status 0 either way: a row over budget is a finding for the reader, not a failure.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LEX_LINE = "  var x: int32 = a[i] + (int32)b * 0x1F - 'c'; // comment\n"
PARSE_KERNEL = ("kernel k{i}(x: float32*, out: float32*, n: int32) {{\n"
                "  var i: int32 = block.x * block_dim.x + thread.x\n"
                "  if (i < n && i >= 0) {{ out[i] = x[i] * 2.0 + (float32)i; }}\n"
                "  for k in 0..n {{ out[k] += sqrtf(x[k]); }}\n}}\n")


def best_of(runs: int, fn) -> float:
    """Seconds: the fastest of `runs` calls of fn, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def straight_line_kernel(lines: int):
    """A straight-line kernel of about `lines` source lines (4 IR ops each)."""
    from toolchain.compiler.ir import F32, I32, I64, VOID, Builder, Module, ptr
    m = Module("big")
    b = Builder(m)
    k = b.function("big", [("x", ptr(F32, "global"))], VOID, kind="kernel")
    b.position_at_end(b.append_block(k, "entry"))
    i = b.convert(b.gpu_index("thread", "x"), I32)
    acc = b.load(b.ptradd(k.params[0], b.convert(i, I64)))
    for n in range(lines):
        v = b.load(b.ptradd(k.params[0], b.convert(b.add(i, b.const(I32, n)), I64)))
        acc = b.add(b.mul(acc, v), b.const(F32, 0.5))
    b.store(b.ptradd(k.params[0], b.convert(i, I64)), acc)
    b.ret()
    return m


def measure(runs: int) -> list[dict]:
    from toolchain.compiler.frontend import parse_source
    from toolchain.compiler.frontend.api import compile_to_ir
    from toolchain.compiler.frontend.lexer import tokenize
    from toolchain.compiler.targets.ptx import emit_ptx, resolve_profile
    from toolchain.compiler.targets.spirv import emit_spirv

    lex_src = LEX_LINE * 200
    parse_src = "".join(PARSE_KERNEL.format(i=i) for i in range(40))
    typical, _ = compile_to_ir(str(ROOT / "bench" / "kernels" / "typical200.mettle"),
                               gpu=True)
    profile = resolve_profile("gb10", None)
    kernels = {n: straight_line_kernel(n) for n in (200, 800)}
    ptx = {n: best_of(runs, lambda m=m: emit_ptx(m, profile)) for n, m in kernels.items()}
    rows = [("lex 200 lines", best_of(runs, lambda: tokenize(lex_src)), 0.05),
            ("parse 200 lines", best_of(runs, lambda: parse_source(parse_src, "perf")), 0.1),
            ("spirv typical200", best_of(runs, lambda: emit_spirv(typical)), 0.25),
            ("ptx 200 lines", ptx[200], 0.05),
            ("ptx 800 lines", ptx[800], None)]
    out = [{"name": name, "ms": round(secs * 1000, 2),
            "budget_ms": None if budget is None else budget * 1000,
            "within": None if budget is None else secs <= budget}
           for name, secs, budget in rows]
    ratio = ptx[800] / ptx[200]
    out.append({"name": "ptx 800/200 ratio", "ratio": round(ratio, 2), "budget_ratio": 12,
                "within": ratio <= 12})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    rows = measure(args.runs)
    print(f"{'phase':<20} {'measured':>10} {'budget':>10}  within")
    for r in rows:
        got = f"{r['ratio']:.2f}x" if "ratio" in r else f"{r['ms']:.1f} ms"
        budget = f"{r['budget_ratio']}x" if "ratio" in r else \
            ("-" if r["budget_ms"] is None else f"{r['budget_ms']:.0f} ms")
        within = "-" if r["within"] is None else ("yes" if r["within"] else "NO")
        print(f"{r['name']:<20} {got:>10} {budget:>10}  {within}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
