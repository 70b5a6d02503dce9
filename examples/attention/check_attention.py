"""Correctness of the attention example on a CUDA GPU against torch SDPA (a script: the
hardware test tests/gpu/test_attention.py runs it, one group of cases per process, and one
small torch-free case per process under compute-sanitizer).

    python3 examples/attention/check_attention.py [--case PATTERN ...] [--list]
                                                  [--form mma|wgmma]
    python3 examples/attention/check_attention.py --sanitizer-case causal|full [--form ...]

`--form wgmma` compiles the kernel with the tile matmuls on wgmma (mettle.compile's
tile_wgmma, sm_90a; docs/internals/tile-wgmma.md); the default is the mma.sync form.

Rule (FlashAttention's forward tests): out_ref = SDPA on float32 copies of the inputs (the
math backend), out_pt = torch's own SDPA in the 16-bit format (the flash backend), and
fwd_atol = 2 * max|(out_ref + 0.3 - 0.3) - out_ref| with out_ref rounded to the 16-bit
format and that arithmetic done in it (the rounding noise of any arithmetic on the
reference); a case passes when every output element is finite and

    max|out - out_ref| <= 2 * max|out_pt - out_ref| + fwd_atol.

Every case also poisons: q, k, v and the output sit in one buffer each between NaN guards
of BLOCK_N·d elements, the output is NaN-filled before the launch, so an element left
unwritten, a write past the output or a read past n that reaches the result fails it.
Case names (fnmatch patterns pick them): FMT-dD-MASK-nN (random, b2 h3, n in {1, 17,
BLOCK_M, BLOCK_M+1, 3·BLOCK_N-5, 2·BLOCK_M+BLOCK_M/2+3}) and FMT-dD-MASK-scale (scale 0.3),
FMT-dD-logits1e4-MASK (inputs scaled so the largest |logit| is 1e4), FMT-dD-equal-MASK (q = 0),
FMT-dD-bigv-MASK (V near the format's largest values), FMT-dD-onekey-causal (row 0 sees
only key 0: its output is v[0] within one rounding), FMT-dD-launches200 (200 back-to-back
launches, causal and full alternating, each bitwise equal to its first result). BLOCK_M and
BLOCK_N are read from the kernel source. Prints one line per case and `CHECK OK` when all
pass; exit 1 otherwise.

With q and k of one length, torch's causal convention (row i sees keys 0..i) leaves no
output row fully masked; the kernel's contract for such a row (output 0) runs on the
padding rows past n of the last row block, which are never stored: the guards check that.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import sys
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from examples.attention.attention import (FORMS, HEAD_DIMS, block_rows,  # noqa: E402
                                          launch, module, reference)

FORMATS = ("f16", "bf16")
MASKS = ("full", "causal")
NAN_BITS = 0x7FC1          # a NaN in both f16 and bf16 (all exponent bits), checked bit for bit
ONE_ROUNDING = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}
BIG_V = {"f16": 60000.0, "bf16": 1.0e30}
DEVICE = "cuda"


def random_ns() -> tuple[int, ...]:
    bm, bn = block_rows()
    return tuple(sorted({1, 17, bm, bm + 1, 3 * bn - 5, 2 * bm + bm // 2 + 3}))


def case_names() -> list[str]:
    names = []
    for fmt in FORMATS:
        for d in HEAD_DIMS:
            v = f"{fmt}-d{d}"
            for mask in MASKS:
                names += [f"{v}-{mask}-n{n}" for n in random_ns()] + [f"{v}-{mask}-scale"]
            for kind in ("logits1e4", "equal", "bigv"):
                names += [f"{v}-{kind}-{mask}" for mask in MASKS]
            names += [f"{v}-onekey-causal", f"{v}-launches200"]
    return names


class Checker:
    """The torch side: guarded buffers, the SDPA references and the rule."""

    def __init__(self, options: dict | None = None):
        import functools
        import torch  # pants: no-infer-dep
        import torch.nn.functional as F  # pants: no-infer-dep
        from torch.nn.attention import SDPBackend, sdpa_kernel  # pants: no-infer-dep
        from examples.attention.attention import attention
        self.torch, self.F = torch, F
        self.attention = functools.partial(attention, options=options or {})
        self.backends, self.sdpa_kernel = SDPBackend, sdpa_kernel
        self.dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}

    def sdpa(self, backend, q, k, v, causal, scale):
        with self.sdpa_kernel(backend):
            return self.F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)

    def guarded(self, shape, fmt, values=None):
        """A tensor of `shape` inside one buffer with NaN guards of BLOCK_N·d elements on
        each side: (tensor, buffer, guard length); `values` fills it, else NaN."""
        torch = self.torch
        count = 1
        for s in shape:
            count *= s
        guard = block_rows()[1] * shape[-1]
        buf = torch.empty(count + 2 * guard, dtype=self.dtypes[fmt], device=DEVICE)
        buf.view(torch.int16).fill_(NAN_BITS)
        t = buf[guard:guard + count].view(shape)
        if values is not None:
            t.copy_(values)
        return t, buf, guard

    def guards_intact(self, buf, guard: int) -> bool:
        bits = buf.view(self.torch.int16)
        return bool((bits[:guard] == NAN_BITS).all() and (bits[-guard:] == NAN_BITS).all())

    def inputs(self, name, fmt, shape):
        """float32 q, k, v ~ N(0, 1), seeded by the case name."""
        gen = self.torch.Generator(device=DEVICE).manual_seed(zlib.crc32(name.encode()))
        return tuple(self.torch.randn(shape, device=DEVICE, generator=gen) for _ in range(3))

    def run(self, fmt, q, k, v, causal, scale=None, out_guarded=None):
        """Ours on guarded copies of q, k, v into a NaN-poisoned guarded output:
        (out, ok_guards)."""
        ins = [self.guarded(t.shape, fmt, t) for t in (q, k, v)]
        out, obuf, og = out_guarded or self.guarded(q.shape, fmt)
        self.attention(ins[0][0], ins[1][0], ins[2][0], causal, scale, out=out)
        self.torch.cuda.synchronize()
        ok = self.guards_intact(obuf, og) and all(self.guards_intact(b, g) for _, b, g in ins)
        return out, ok

    def rule(self, q, k, v, causal, scale, out) -> tuple[bool, float, float]:
        """FlashAttention's forward rule (the module docstring): (ok, error, bound)."""
        B = self.backends
        ref = self.sdpa(B.MATH, q.float(), k.float(), v.float(), causal, scale)
        pt = self.sdpa(B.FLASH_ATTENTION, q, k, v, causal, scale).float()
        ref_lp = ref.to(q.dtype)
        fwd_atol = 2 * ((ref_lp + 0.3 - 0.3) - ref_lp).float().abs().max().item()
        err = (out.float() - ref).abs().max().item()
        bound = 2 * (pt - ref).abs().max().item() + fwd_atol
        finite = bool(out.isfinite().all().item())
        return finite and err <= bound, err, bound


def run_case(ck: Checker, name: str) -> tuple[bool, str]:
    fmt, dpart, kind, *rest = name.split("-")
    d, dt = int(dpart[1:]), ck.dtypes[fmt]
    shape = (2, 3)
    if kind in MASKS:                        # FMT-dD-MASK-nN | FMT-dD-MASK-scale
        causal = kind == "causal"
        n = block_rows()[0] + 1 if rest[0] == "scale" else int(rest[0][1:])
        scale = 0.3 if rest[0] == "scale" else None
        q, k, v = (t.to(dt) for t in ck.inputs(name, fmt, (*shape, n, d)))
        out, guards = ck.run(fmt, q, k, v, causal, scale)
        ok, err, bound = ck.rule(q, k, v, causal, scale, out)
        return verdict(ok, guards, f"max err {err:.3g} (bound {bound:.3g})")
    causal = rest[-1] == "causal" if rest else True
    n = 3 * block_rows()[1] - 5
    if kind == "logits1e4":
        q, k, v = ck.inputs(name, fmt, (*shape, n, d))
        q, k = q.to(dt).float(), k.to(dt).float()
        top = ((q @ k.transpose(-1, -2)) * d ** -0.5).abs().max().item()
        s = (1.0e4 / top) ** 0.5
        q, k, v = (q * s).to(dt), (k * s).to(dt), v.to(dt)
        top = ((q.float() @ k.float().transpose(-1, -2)) * d ** -0.5).abs().max().item()
        detail = f"largest |logit| {top:.3g}, "
    elif kind == "equal":
        q, k, v = (t.to(dt) for t in ck.inputs(name, fmt, (*shape, n, d)))
        q = ck.torch.zeros_like(q)
        detail = ""
    elif kind == "bigv":
        q, k, v = ck.inputs(name, fmt, (*shape, n, d))
        gen = ck.torch.Generator(device=DEVICE).manual_seed(1)
        v = (ck.torch.rand(v.shape, device=DEVICE, generator=gen) * 2 - 1) * BIG_V[fmt]
        q, k, v = q.to(dt), k.to(dt), v.to(dt)
        detail = f"|v| up to {BIG_V[fmt]:.3g}, "
    elif kind == "onekey":
        q, k, v = (t.to(dt) for t in ck.inputs(name, fmt, (*shape, n, d)))
        out, guards = ck.run(fmt, q, k, v, True)
        first = (out[:, :, 0].float() - v[:, :, 0].float()).abs()
        limit = v[:, :, 0].float().abs() * ONE_ROUNDING[fmt] + 1e-30
        exact = bool((first <= limit).all().item())
        ok, err, bound = ck.rule(q, k, v, True, None, out)
        return verdict(ok and exact, guards, f"row 0 = v[0] within one rounding: {exact}; "
                       f"max err {err:.3g} (bound {bound:.3g})")
    elif kind == "launches200":
        n = 2 * block_rows()[0] + 7
        q, k, v = (t.to(dt) for t in ck.inputs(name, fmt, (2, 4, n, d)))
        outs = {c: ck.guarded(q.shape, fmt) for c in (False, True)}
        first = {c: ck.run(fmt, q, k, v, c, out_guarded=outs[c])[0].clone() for c in outs}
        t0 = time.perf_counter()
        for i in range(200):
            ck.attention(q, k, v, bool(i % 2), out=outs[bool(i % 2)][0])
        ck.torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        same = all(ck.torch.equal(outs[c][0], first[c]) for c in outs)
        guards = all(ck.guards_intact(b, g) for _, b, g in outs.values())
        checks = [ck.rule(q, k, v, c, None, outs[c][0]) for c in outs]
        errors = "; ".join(f"{'causal' if c else 'full'} max err {e:.3g} (bound {b:.3g})"
                           for c, (_, e, b) in zip(outs, checks))
        return verdict(same and all(c[0] for c in checks), guards,
                       f"200 launches in {secs:.2f} s, bitwise equal to the first: {same}; "
                       f"{errors}")
    else:
        raise ValueError(f"unknown case {name}")
    out, guards = ck.run(fmt, q, k, v, causal)
    ok, err, bound = ck.rule(q, k, v, causal, None, out)
    return verdict(ok, guards, f"{detail}max err {err:.3g} (bound {bound:.3g})")


def verdict(ok: bool, guards: bool, detail: str) -> tuple[bool, str]:
    return ok and guards, detail + ("" if guards else "; a NaN GUARD WAS OVERWRITTEN")


def sanitizer_case(mask: str, options: dict | None = None) -> int:
    """One small f16 case with no torch in the process (compute-sanitizer then checks only
    our kernel): causal d64 over two row blocks, or full d128 with a ragged key block,
    against the float64 oracle."""
    import numpy as np
    import mettle
    causal = mask == "causal"
    bm, bn = block_rows()
    d, n = (64, bm + bm // 2 + 3) if causal else (128, bn + 5)
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, n, d)).astype(np.float16) for _ in range(3))
    o = mettle.to_device(np.full((2, n, d), np.nan, np.float16))
    launch(module(d, "f16", options=options), *(mettle.to_device(t) for t in (q, k, v)), o,
           2, n, d ** -0.5, causal)
    mettle.synchronize()
    got = o.numpy().astype(np.float64)
    want = reference(q, k, v, causal, d ** -0.5)
    # f16 rounding of P and of the output: 4e-3 absolute, relative above 1
    err = float((np.abs(got - want) / np.maximum(1.0, np.abs(want))).max())
    ok = bool(np.isfinite(got).all()) and err <= 4e-3
    print(f"{'ok  ' if ok else 'FAIL'} sanitizer case f16 d{d} {mask} n{n}: max error "
          f"{err:.3g} (absolute, relative above 1; bound 4e-3)")
    print("CHECK OK" if ok else "CHECK FAILED")
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", default=[],
                    help="fnmatch pattern(s) of case names, comma-separated (default: all)")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    ap.add_argument("--sanitizer-case", choices=MASKS,
                    help="run one small torch-free case (for compute-sanitizer)")
    ap.add_argument("--form", choices=tuple(FORMS), default="mma",
                    help="the tile matmuls on mma.sync (default) or wgmma (sm_90a)")
    args = ap.parse_args(argv)
    if args.sanitizer_case:
        return sanitizer_case(args.sanitizer_case, FORMS[args.form])
    patterns = [p for item in args.case for p in item.split(",") if p] or ["*"]
    names = [c for c in case_names() if any(fnmatch.fnmatchcase(c, p) for p in patterns)]
    if args.list:
        print("\n".join(names))
        return 0
    if not names:
        print(f"CHECK FAILED: no case matches {patterns}")
        return 1
    ck = Checker(FORMS[args.form])
    print(f"form: {args.form}", flush=True)
    failures = 0
    for name in names:
        print(f"---- {name}", flush=True)      # names the case a fault interrupts
        ok, detail = run_case(ck, name)
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    print("CHECK OK" if failures == 0 else f"CHECK FAILED: {failures} of {len(names)} case(s)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
