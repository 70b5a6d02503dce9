"""One workgroup GEMM case on the GPU, with pipeline knobs overridden, and where it is wrong
(a diagnostic, not a test): the rows and columns of unwritten (NaN) elements, of touched
padding and of wrong values, against torch in fp32.

    python3 tools/gpu/gemm_case.py 129x257x65 [--fmt bf16] [--out f32] [--schedule auto]
                                   [--grid 3] [--pad 63] [--dpad 8] [--knob TMA_STORE=0 ...]
                                   [--workspace] [--cluster 2] [--bn 240] [--bm 256]

`pad`: elements past K of A's and B's rows and past N of C's (and D's, unless --dpad).

Run each case in its own process: a faulting kernel poisons the CUDA context."""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]      # bench's modules import each other


def spans(idx) -> str:
    """Compact ranges of the sorted unique integers in `idx`."""
    vals = sorted(set(int(v) for v in idx))
    out, start = [], None
    for i, v in enumerate(vals):
        if start is None:
            start = v
        if i + 1 == len(vals) or vals[i + 1] != v + 1:
            out.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ",".join(out[:12]) + (" ..." if len(out) > 12 else "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("shape")
    ap.add_argument("--fmt", default="f16")
    ap.add_argument("--out", default="f32")
    ap.add_argument("--schedule", default="auto")
    ap.add_argument("--grid", type=int, default=None)
    ap.add_argument("--pad", type=int, default=8)
    ap.add_argument("--dpad", type=int, default=None)
    ap.add_argument("--knob", action="append", default=[])
    ap.add_argument("--workspace", action="store_true", help="stream-K (`workspace:`)")
    ap.add_argument("--cluster", type=int, default=1, help="`cluster:` (2: clusters of 2)")
    ap.add_argument("--bn", type=int, default=256, help="the region's width")
    ap.add_argument("--bm", type=int, default=128, help="the region's height (256: tall)")
    args = ap.parse_args()
    from toolchain.compiler.targets.ptx.tensor import wgmma
    from wgmma_kernels import parse_knob  # pants: no-infer-dep  (bench/ on sys.path above)
    for kv in args.knob:
        try:
            setattr(wgmma, *parse_knob(wgmma, kv))
        except ValueError as e:
            ap.error(f"--knob {e}")
    import torch  # pants: no-infer-dep
    import mettle
    import gemm_hopper as H  # pants: no-infer-dep  (bench/ on sys.path above)
    m, n, k = (int(x) for x in args.shape.split("x"))
    g = H.Gemm(mettle.device(0), args.fmt, bm=args.bm, bn=args.bn, out=args.out, persistent=True,
               schedule=args.schedule, cluster=args.cluster, workspace=args.workspace)
    dtype = torch.float16 if args.fmt == "f16" else torch.bfloat16
    torch.manual_seed(0)
    pad = args.pad
    a = torch.randn(m, k + pad, device="cuda").to(dtype)[:, :k]
    bt = torch.randn(n, k + pad, device="cuda").to(dtype)[:, :k]
    c = torch.randn(m, n + pad, device="cuda")[:, :n]
    dpad = pad if args.dpad is None else args.dpad
    dfull = torch.full((m, n + dpad), float("nan"), device="cuda",
                       dtype=H.torch_dtype(torch, args.out))
    d = dfull[:, :n]
    kw = {"grid_x": args.grid} if args.grid else {}
    g.launcher(a, bt, c, d, m, n, k, **kw)()
    torch.cuda.synchronize()
    ref = (c + a.float() @ bt.float().t()).to(d.dtype).float()
    got = d.float()
    nan = torch.isnan(got).nonzero().cpu()
    touched = (~torch.isnan(dfull[:, n:].float())).nonzero().cpu()
    wrong = ((got - ref).abs() > 1e-2 * (ref.abs() + 1)).nonzero().cpu()
    print(f"{args.shape} {args.fmt}->{args.out} {args.schedule} cluster {args.cluster} "
          f"{args.bm}x{args.bn} pad {pad}/{dpad} "
          f"knobs {args.knob}: "
          f"{len(nan)} NaN, {len(touched)} padding written, {len(wrong)} wrong")
    for what, idx, off in (("NaN", nan, 0), ("padding", touched, n), ("wrong", wrong, 0)):
        if len(idx):
            print(f"  {what}: rows {spans(idx[:, 0])}; columns {spans(idx[:, 1] + off)}")
    return 1 if len(nan) or len(touched) or len(wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
