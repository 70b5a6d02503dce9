"""Triton peers for the row benchmarks: softmax and layer norm with one program per row, as in
Triton's tutorials (the whole row in registers, BLOCK = next power of two of the columns).

`launcher(torch, kind, x, gamma, beta)` returns a zero-argument callable that computes into a
preallocated output; it raises ImportError where Triton is not installed.
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _softmax_row(x_ptr, y_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def _layernorm_row(x_ptr, y_ptr, w_ptr, b_ptr, stride, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * stride + offs, d * rstd * w + b, mask=mask)


def launcher(torch, kind: str, x, gamma, beta):
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = 8 if block >= 2048 else 4
    if kind == "softmax":
        run = lambda: _softmax_row[(rows,)](x, y, x.stride(0), cols, BLOCK=block,
                                           num_warps=warps)
        ref = torch.softmax(x, dim=1)
    else:
        run = lambda: _layernorm_row[(rows,)](x, y, gamma, beta, x.stride(0), cols, 1e-5,
                                             BLOCK=block, num_warps=warps)
        ref = torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5)
    run()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    return run
