"""Correctness of the attention example on a CUDA GPU against torch SDPA (a script: the
hardware test tests/gpu/test_attention.py runs it in a subprocess, optionally under
compute-sanitizer).

    python3 examples/attention/check_attention.py [--quick]

Rule (FlashAttention's forward tests): with out_ref = SDPA on float32 copies and out_pt =
SDPA in the 16-bit format, max|out - out_ref| <= 2 * max|out_pt - out_ref| + atol, atol =
2 * max|(out_ref + 0.3 - 0.3) - out_ref| evaluated in the 16-bit format. Cases: d 64 and
128, f16 and bf16, full and causal, n in {1, 17, 128, 300} (any n: ragged tails), plus
adversarial inputs (logits scaled x1000, all-equal logits, V near the f16 maximum).
Prints one line per case and `CHECK OK` when every case passes; exit 1 otherwise.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def bound(torch, F, q, k, v, causal: bool, out) -> tuple[bool, float, float]:
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    pt = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
    atol = 2 * ((ref + 0.3 - 0.3).to(q.dtype).float() - ref).abs().max().item()
    err = (out.float() - ref).abs().max().item()
    limit = 2 * (pt - ref).abs().max().item() + atol
    return err <= limit and out.isfinite().all().item(), err, limit


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import torch
    import torch.nn.functional as F
    from examples.attention.attention import attention
    quick = "--quick" in argv
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
    ns = (17, 300) if quick else (1, 17, 128, 300)
    failures = 0
    gen = torch.Generator(device="cuda").manual_seed(0)

    def case(label, q, k, v, causal):
        nonlocal failures
        out = attention(q, k, v, causal)
        torch.cuda.synchronize()
        ok, err, limit = bound(torch, F, q, k, v, causal, out)
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label}: max err {err:.3g} (bound {limit:.3g})",
              flush=True)

    for d in (64, 128):
        for name, dt in dtypes.items():
            for causal in (False, True):
                for n in ns:
                    q, k, v = (torch.randn(1, 2, n, d, device="cuda", dtype=dt, generator=gen)
                               for _ in range(3))
                    case(f"d{d} {name} {'causal' if causal else 'full'} n{n}", q, k, v, causal)
            n = 200
            q, k, v = (torch.randn(1, 2, n, d, device="cuda", dtype=dt, generator=gen)
                       for _ in range(3))
            case(f"d{d} {name} logits x1000 n{n}", q * 31.6, k * 31.6, v, True)
            case(f"d{d} {name} equal logits n{n}", torch.zeros_like(q), k, v, False)
            if name == "f16":
                big = (torch.rand(1, 2, n, d, device="cuda", generator=gen) * 2 - 1) * 60000
                case(f"d{d} {name} V near f16 max n{n}", q, k, big.to(dt), False)
    print("CHECK OK" if failures == 0 else f"CHECK FAILED: {failures} case(s)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
