"""Where a built attention kernel goes wrong: its output against SDPA in float32 on small
inputs, the largest error of each 16 rows and 16 columns (a diagnostic, not a test).

    python3 tools/gpu/attention_probe.py KERNEL.ptx... [--n 64,65,128] \
        [--inputs random,uniform,repeatK,repeatV] [--const BLOCK_N=64]

Each KERNEL is a module built with `mettle --emit-ptx --emit-signature KERNEL.sig.json`
(a cubin from `ptxas` under the same name loads too: the driver takes either), f16,
launched through the example's launcher with the given --const overrides (its grid). The
inputs: `random` (normal q, k, v), `uniform` (q = k = 0: every score 0, so only P·V and
the copies matter), `repeatK`/`repeatV` (every 64-key block a copy of the first: the
right output is the one-block output). b = h = 1, d from the kernel's signature name.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

from attention import sdpa_or_reason  # noqa: E402  # pants: no-infer-dep


def inputs(torch, kind: str, n: int, d: int):
    q, k, v = (torch.randn(1, 1, n, d, device="cuda").half() for _ in range(3))
    if kind == "uniform":
        q.zero_()
        k.zero_()
    for name, t in (("repeatK", k), ("repeatV", v)):
        if kind == name and n > 64:
            t[:, :, 64:] = t[:, :, :64].repeat(1, 1, -(-n // 64), 1)[:, :, :n - 64]
    return q, k, v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="+")
    ap.add_argument("--n", default="64,65,128,256")
    ap.add_argument("--inputs", default="random,uniform")
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--const", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    found = sdpa_or_reason()
    if isinstance(found, str):
        print(f"attention probe: {found}; nothing to do")
        return 0
    torch, F = found[0], found[1]
    torch.zeros(1, device="cuda")       # torch first: mettle joins its primary context
    import mettle
    from examples.attention.attention import launch
    consts = {k: int(v) if v.isdigit() else v
              for k, _, v in (c.partition("=") for c in args.const)}
    torch.manual_seed(0)
    for path in args.kernels:
        mod = mettle.load(path)
        for n in (int(x) for x in args.n.split(",")):
            for kind in args.inputs.split(","):
                q, k, v = inputs(torch, kind, n, args.d)
                for causal in (False, True):
                    o = torch.empty_like(q)
                    launch(mod, q, k, v, o, 1, n, args.d ** -0.5, causal, consts=consts)
                    torch.cuda.synchronize()
                    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                         is_causal=causal)
                    err = (o.float() - ref).abs()[0, 0]
                    rows = " ".join(f"{err[r:r + 16].max().item():.1g}"
                                    for r in range(0, n, 16))
                    cols = " ".join(f"{err[:, c:c + 16].max().item():.1g}"
                                    for c in range(0, args.d, 16))
                    print(f"{os.path.basename(path)} n{n} {kind} "
                          f"{'causal' if causal else 'full'}: max {err.max().item():.3g}; "
                          f"rows/16 {rows}; cols/16 {cols}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
