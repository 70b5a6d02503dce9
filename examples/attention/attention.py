"""The attention example's launcher on the mettle runtime, and its CPU oracle.

    from examples.attention.attention import attention
    o = attention(q, k, v, causal=True)        # torch [b, h, n, d], f16 or bf16, on CUDA

compiles attention.mettle once per (head dim, format) with `--const` (mettle.compile's
`consts`, cached on disk by the runtime) and launches one workgroup of 384 work-items per
128 query rows of each (batch, head). `reference` is the float64 numpy oracle the tests
compare against. Tiles lower to the exact replay (docs/reference/tiles.md "Targets"),
except that on sm_80 and newer the two matmuls run on warp tensor cores (`mma.sync`);
`module(d, fmt, options={"tile_mma": False})` builds the all-replay variant. The
register-resident sm_90a form (wgmma, TMA) is a later step.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_name("attention.mettle")
BLOCK = 384                 # kernel(block = 384)
FORMATS = {"float16": "f16", "bfloat16": "bf16"}
_modules: dict = {}


def module(head_dim: int, fmt: str, arch: str | None = None, consts: dict | None = None,
           options: dict | None = None):
    """The compiled variant (mettle.Module) for one head dimension and format; `options`:
    more mettle.compile options (tile_mma=False: the matmuls replay too)."""
    import mettle
    key = (head_dim, fmt, arch, tuple(sorted((consts or {}).items())),
           tuple(sorted((options or {}).items())))
    if key not in _modules:
        _modules[key] = mettle.compile(str(SOURCE), arch, consts={
            "HEAD_DIM": head_dim, "ELEM": fmt, **(consts or {})}, **(options or {}))
    return _modules[key]


def attention(q, k, v, causal: bool = False, scale: float | None = None, *,
              arch: str | None = None, block_m: int = 128, out=None):
    """softmax(q·kᵀ·scale)·v for torch tensors [b, h, n, d] (f16/bf16, contiguous, CUDA)."""
    import torch
    b, h, n, d = q.shape
    if k.shape != q.shape or v.shape != q.shape or not (q.dtype == k.dtype == v.dtype):
        raise ValueError("attention: q, k, v need one shape [b, h, n, d] and one dtype")
    fmt = FORMATS.get(str(q.dtype).removeprefix("torch."))
    if fmt is None or d not in (64, 128):
        raise ValueError(f"attention: f16/bf16 with d in (64, 128), got {q.dtype}, d={d}")
    q, k, v = (t.contiguous() for t in (q, k, v))
    o = torch.empty_like(q) if out is None else out
    mod = module(d, fmt, arch)
    scale = d ** -0.5 if scale is None else scale
    mod.attention[(math.ceil(n / block_m), b * h, 1), BLOCK](
        q, k, v, o, n, float(scale), int(bool(causal)))
    return o


def reference(q, k, v, causal: bool, scale: float) -> np.ndarray:
    """float64 attention over [..., n, d] arrays (any float dtype). A causal row i sees
    keys 0..i (the top-left diagonal, as torch's is_causal for equal lengths)."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v
