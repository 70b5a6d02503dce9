"""The plain-source K-loop GEMM without a declared block shape (a script, not a test).

    python3 bench/kloop_held.py [--size 4096] [--reps 10] [--json kloop_held.json]

`bench/kernels/kloop_held.mettle` is the held-out-style kernel: a subgroup per 16x16 tile,
`tensor_mma` in a `for` loop over K, no `block =` annotation. -O stages its operands through
shared memory sized for the subgroups its tile index names (4: an 8 KiB area, as the
declared form's) and tests each subgroup at run time
(toolchain/compiler/targets/ptx/tensor/staging.py). This script compiles it -O (staged,
pipelined), -O with the areas sized for 8 subgroups (16 KiB: the earlier sizing, whose
shared-memory carveout left little L1), -O with the lane offsets hoisted out of the K loop
(staging.HOIST_OFFSETS: fewer instructions, more registers), -O with the synchronous staged
form, -O --gpu-wmma-staging=off (unstaged) and without -O, plus plain.mettle's
declared-shape gemm_kloop -O as the yardstick; launches each at 4096^3 with 128 work-items, checks the
result against torch, requires every staged -O form to equal the unstaged one bitwise, and
prints TFLOP/s (2*M*N*K) beside torch.matmul.
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
from launching import compile_module, local_arch  # noqa: E402  # pants: no-infer-dep
from timing import timed_together  # noqa: E402  # pants: no-infer-dep

HELD = os.path.join(ROOT, "bench", "kernels", "kloop_held.mettle")
PLAIN = os.path.join(ROOT, "bench", "kernels", "plain.mettle")


def _with(module, name: str, value, source: str, arch: str):
    """`source` compiled -O with `module.name` set to `value` for the compile."""
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        return compile_module(source, arch, optimize=True)
    finally:
        setattr(module, name, saved)


def variants(arch: str) -> dict:
    """label -> (module, kernel name)."""
    from toolchain.compiler.targets.ptx.tensor import staging
    held = {"held -O": compile_module(HELD, arch, optimize=True),
            "held -O no-staging": compile_module(HELD, arch, optimize=True,
                                                 wmma_staging=False),
            "held plain": compile_module(HELD, arch, optimize=False),
            "held -O sync-staging": _with(staging, "PIPELINE", False, HELD, arch),
            # the earlier 16 KiB (256-item) areas, and the lane offsets hoisted (48 registers)
            "held -O 16KiB-area": _with(staging, "subgroups_hint", lambda fn: 8, HELD, arch),
            "held -O hoisted": _with(staging, "HOIST_OFFSETS", True, HELD, arch)}
    if "wmma_pipe[16384]" not in held["held -O 16KiB-area"].ptx:
        raise SystemExit("held -O 16KiB-area: the areas were not resized")
    if "staged pipelined launch-guarded" not in held["held -O"].ptx:
        raise SystemExit("held -O: the K loop was not staged (see --explain)")
    out = {label: (mod, "gemm_kloop_held") for label, mod in held.items()}
    out["declared -O"] = (compile_module(PLAIN, arch, optimize=True), "gemm_kloop")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", default="kloop_held.json")
    args = ap.parse_args()
    import torch  # pants: no-infer-dep
    torch.zeros(1, device="cuda")                 # torch's (primary) context first
    dev, arch, size = mettle.device(0), local_arch(), args.size
    a = torch.randn(size, size, device="cuda").half()
    b = torch.randn(size, size, device="cuda").half()
    c0 = torch.randn(size, size, device="cuda")
    ref = c0 + a.float() @ b.float()
    tiles = (size // 16) * (size // 16)
    flop = 2.0 * size ** 3
    outs, fns = {}, {}
    for label, (mod, name) in variants(arch).items():
        fn = mod[name][(tiles + 3) // 4, 128]
        c = c0.clone()
        fn(a, b, c, size, size, size)
        torch.cuda.synchronize()
        err = ((c - ref).abs().max() / ref.abs().max()).item()
        if not err < 1e-3:
            raise SystemExit(f"{label}: differs from torch (max rel err {err})")
        outs[label] = c
        scratch = c0.clone()
        fns[label] = (lambda f=fn, s=scratch: f(a, b, s, size, size, size))
    for label in ("held -O", "held -O 16KiB-area", "held -O hoisted", "held -O sync-staging"):
        same = torch.equal(outs[label], outs["held -O no-staging"])
        print(f"{label} vs held -O no-staging: bitwise {'equal' if same else 'DIFFER'}")
        if not same:
            raise SystemExit(f"{label}: staging changed the bits")
    fns["torch.matmul"] = lambda: torch.matmul(a, b)
    ms = timed_together(torch, fns, args.reps)
    print(f"device: {dev.name} ({arch}), {size}^3, 128 work-items a workgroup")
    rows = []
    for label, t in ms.items():
        rate = flop / t / 1e9
        print(f"{label:<24} {t:>9.4f} ms {rate:>8.1f} TFLOP/s")
        rows.append({"who": label, "ms": round(t, 5), "tflops": round(rate, 2)})
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": dev.name, "arch": arch, "size": size, "results": rows}, fh,
                  indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
