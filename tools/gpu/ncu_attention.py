"""One launch each of the attention example (wgmma form) and of SDPA's flash backend, per
shape and mask: a driver for Nsight Compute on the H200.

    ncu --clock-control none -k regex:attention|flash --section WarpStateStats ... \
        python3 tools/gpu/ncu_attention.py b8h16n4096d128 b16h16n2048d64

Each shape is launched full and causal, f16; extra arguments NAME=VALUE are --const
overrides of the example (BLOCK_M=128).
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

from attention import parse_shape, sdpa_or_reason  # noqa: E402  # pants: no-infer-dep
from examples.attention.attention import FORMS, attention  # noqa: E402


def main(argv: list[str]) -> int:
    found = sdpa_or_reason()
    if isinstance(found, str):
        print(f"ncu_attention: {found}")
        return 0
    torch, F, SDPBackend, sdpa_kernel = found
    consts = dict(a.split("=", 1) for a in argv if "=" in a)
    consts = {k: int(v) if v.isdigit() else v for k, v in consts.items()}
    shapes = [a for a in argv if "=" not in a] or ["b8h16n4096d128"]
    for shape in shapes:
        b, h, n, d = parse_shape(shape)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        for causal in (False, True):
            attention(q, k, v, causal, options=FORMS["wgmma"], consts=consts or None)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.cuda.synchronize()
            print(f"launched {shape} causal={causal}: ours (wgmma), SDPA flash", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
