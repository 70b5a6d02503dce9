"""What the workgroup GEMM's D stores cost (a script, not a test): each persistent schedule
timed as compiled and with its D stores switched off in the PTX (predicated on a run-time
test no launch passes, so everything else, wgmma, C loads and conversions included, still
runs), beside torch.matmul, in interleaved rounds on torch's contract (f16 in, f16 D, no
C: a zero row read with ldc = 0).

    python3 bench/gemm_epilogue_cost.py [--shapes 4096x4096x4096,8192x8192x1024]
                                        [--schedules cooperative,pingpong] [--json F]
                                        [--out f16,f32] [--bn 232] [--cluster 2]

(`--out f32`: an f32 D, still without C, for the rows whose D is twice the bytes.)

The gap between the two columns is the most any change to how D is stored can win; the
store-free kernel writes nothing anyone can read, so it is timed, never checked.
Without a GPU or torch it says why and exits 0."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys


STORE = re.compile(r"^(\s*)(?:@(!?)(%p\d+)\s+)?"
                   r"(st\.global\S*\s.*|cp\.async\.bulk\.tensor\.\w+\.global\.shared\S*\s.*)$")


def without_stores(ptx: str) -> str:
    """The PTX with every global store after the first wgmma (D's stores from the registers
    and through the copy engine; the tensor maps are written before it) predicated on M == 0xffffffff, which no launch here passes:
    ptxas cannot prove them dead, so it keeps the wgmma, conversions and C loads that feed
    them, and at run time no D element is written."""
    out, seen = [], False
    for line in ptx.split("\n"):
        if line.strip() == "ld.param.u32 %r1, [gemm_param_4];":        # M
            out += [line, "\tsetp.eq.u32 %p_never, %r1, -1;"]
            continue
        if line.lstrip().startswith(".reg .pred"):
            out += [line, "\t.reg .pred %p_never, %p_store;"]
            continue
        seen = seen or "wgmma.mma_async" in line
        m = STORE.match(line) if seen else None
        if m is None:
            out.append(line)
            continue
        indent, neg, guard, store = m.groups()
        if guard is None:
            out.append(f"{indent}@%p_never {store}")
        else:
            out += [f"{indent}and.pred %p_store, {neg}{guard}, %p_never;",
                    f"{indent}@%p_store {store}"]
    text = "\n".join(out)
    assert "%p_never, %r1" in text, "the kernel's M parameter was not found"
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x1024")
    ap.add_argument("--schedules", default="cooperative,pingpong")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", default="gemm_epilogue_cost.json")
    ap.add_argument("--out", default="f16", help="D formats (f16, f32), each its own row")
    ap.add_argument("--bn", type=int, default=None, help="the region's width")
    ap.add_argument("--cluster", type=int, default=1, help="`cluster:` (2: clusters of 2)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("gemm_epilogue_cost: torch is not installed; nothing to do")
        return 0
    if not torch.cuda.is_available():
        print("gemm_epilogue_cost: no CUDA device; nothing to do")
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import gemm_hopper as H  # pants: no-infer-dep
    import mettle
    from launching import with_ptx  # pants: no-infer-dep
    from timing import timed_together  # pants: no-infer-dep
    torch.zeros(1, device="cuda")
    dev = mettle.device(0)
    rows = []
    width = {"bn": args.bn} if args.bn else {}
    for shape, out in ((s, o) for s in args.shapes.split(",") for o in args.out.split(",")):
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda").half()
        bt = torch.randn(n, k, device="cuda").half()
        zero = torch.zeros(1, n, device="cuda")
        d = torch.empty(m, n, device="cuda",
                        dtype=torch.float32 if out == "f32" else torch.float16)
        runs = {}
        for sched in args.schedules.split(","):
            g = H.Gemm(dev, "f16", out=out, persistent=True, schedule=sched,
                       cluster=args.cluster, **width)
            runs[sched] = g.launcher(a, bt, zero, d, m, n, k, ldc=0)
            g.module = with_ptx(g.module, without_stores(g.module.ptx), f"{sched} no stores")
            g.fn = g.module.gemm
            runs[f"{sched} no stores"] = g.launcher(a, bt, zero, d, m, n, k, ldc=0)
        b = bt.t()
        runs["torch"] = lambda: torch.matmul(a, b)
        ms = timed_together(torch, runs, args.reps)
        flop = 2.0 * m * n * k
        row = {"shape": shape, "out": out, "bn": g.bn, "cluster": args.cluster,
               **{f"{name}_tflops": round(flop / t / 1e9, 1)
                                  for name, t in ms.items()}}
        rows.append(row)
        print(row, flush=True)
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": dev.name, "unit": "TFLOP/s", "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
