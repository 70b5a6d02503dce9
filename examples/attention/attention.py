"""The attention example's launcher on the mettle runtime, and its CPU oracle.

    from examples.attention.attention import attention
    o = attention(q, k, v, causal=True)        # torch [b, h, n, d], f16 or bf16, on CUDA

compiles attention.mettle once per (head dim, format) with `--const` (mettle.compile's
`consts`, cached on disk by the runtime) and launches one workgroup per BLOCK_M query rows
of each (batch, head): grid (ceil(n / BLOCK_M), b·h, 1). BLOCK_M, BLOCK_N and the
workgroup size are read from the kernel (its `const` declarations, after any `consts`
override, and the compiled signature's `kernel(block = ...)`), never restated here, so a
retuned kernel needs no launcher change. `launch` takes any arrays the runtime passes
(torch tensors, mettle.DeviceArray). `reference` is the float64 numpy oracle.
`module(d, fmt, options={"tile_mma": False})` builds the all-replay variant.
"""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_name("attention.mettle")
KERNEL = "attention"
FORMATS = {"float16": "f16", "bfloat16": "bf16"}
HEAD_DIMS = (64, 128)
# the tile matmuls' forms as mettle.compile options (docs/internals/tile-wgmma.md): mma.sync,
# wgmma with A from registers, or wgmma with Q in workgroup memory (sm_90a's default)
FORMS = {"mma": {"tile_wgmma": False}, "wgmma": {"tile_wgmma": True, "tile_wgmma_a": "registers"},
         "wgmma-ss": {"tile_wgmma": True, "tile_wgmma_a": "shared"}}
MAX_GRID_Y = 65535                 # CUDA's limit on gridDim.y: b·h workgroup rows
_modules: dict = {}
_constants: dict = {}
_CONST = re.compile(r"^const\s+([A-Za-z_]\w*)\s*(?::\s*\w+\s*)?=\s*([^;]+);", re.M)
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a // b,
        ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
        ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b}


def _integer(expr: str, known: dict):
    """The value of a const initializer: an integer expression over literals and earlier
    integer consts (Mettle's `/` on integers truncates), else None (a format, a float)."""
    def ev(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and isinstance(known.get(node.id), int):
            return known[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(expr)
    try:
        return ev(ast.parse(expr.strip(), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def constants(consts: dict | None = None) -> dict:
    """The top-level consts of attention.mettle, `consts` (the --const overrides) applied:
    integers as int, formats and other words as their text (e.g. {"BLOCK_M": 128, ...})."""
    key = tuple(sorted((str(k), str(v)) for k, v in (consts or {}).items()))
    if key not in _constants:
        _constants[key] = _read_constants(consts)
    return dict(_constants[key])


def _read_constants(consts: dict | None) -> dict:
    text = re.sub(r"//[^\n]*", "", SOURCE.read_text(encoding="utf-8"))
    values: dict = {}
    for name, expr in _CONST.findall(text):
        if consts and name in consts:
            expr = str(consts[name])
        value = _integer(expr, values)
        values[name] = value if value is not None else expr.strip()
    return values


def block_rows(consts: dict | None = None) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N): query rows per workgroup and keys per step of the kernel."""
    key = tuple(sorted((str(k), str(v)) for k, v in (consts or {}).items()))
    values = _constants.get(key) or constants(consts)
    rows = values.get("BLOCK_M"), values.get("BLOCK_N")
    if not all(isinstance(r, int) and r > 0 for r in rows):
        raise ValueError(f"attention: {SOURCE.name} declares no integer BLOCK_M and BLOCK_N "
                         f"consts the launcher can read (found {rows})")
    return rows


def module(head_dim: int, fmt: str, arch: str | None = None, consts: dict | None = None,
           options: dict | None = None):
    """The compiled variant (mettle.Module) for one head dimension and format; `consts`:
    more --const overrides; `options`: more mettle.compile options (tile_mma=False: the
    matmuls replay too)."""
    import mettle
    key = (head_dim, fmt, arch, tuple(sorted((consts or {}).items())),
           tuple(sorted((options or {}).items())))
    if key not in _modules:
        _modules[key] = mettle.compile(str(SOURCE), arch, consts={
            "HEAD_DIM": head_dim, "ELEM": fmt, **(consts or {})}, **(options or {}))
    return _modules[key]


def grid(n: int, batch_heads: int, consts: dict | None = None) -> tuple[int, int, int]:
    """The launch grid: one workgroup per BLOCK_M query rows of each (batch, head)."""
    if batch_heads > MAX_GRID_Y:
        raise ValueError(f"attention: b*h = {batch_heads} exceeds the grid's y limit "
                         f"{MAX_GRID_Y}")
    return (math.ceil(n / block_rows(consts)[0]), batch_heads, 1)


def launch(mod, q, k, v, o, batch_heads: int, n: int, scale: float, causal: bool, *,
           consts: dict | None = None, stream=None) -> None:
    """One launch of `mod`'s kernel on contiguous [batch_heads, n, d] arrays (any array the
    runtime passes); nothing is launched when there is no row."""
    if n == 0 or batch_heads == 0:
        return
    block = mod.signature.kernels[KERNEL].block
    mod[KERNEL].launch(q, k, v, o, n, float(scale), int(bool(causal)),
                       grid=grid(n, batch_heads, consts), block=block, stream=stream)


def attention(q, k, v, causal: bool = False, scale: float | None = None, *,
              arch: str | None = None, consts: dict | None = None, out=None,
              options: dict | None = None):
    """softmax(q·kᵀ·scale)·v for torch tensors [b, h, n, d] (f16/bf16, CUDA); `out`: a
    contiguous tensor of q's shape and dtype to write (else a new one); `options`: more
    mettle.compile options ({"tile_wgmma": False}: the matmuls on mma.sync instead of
    wgmma on sm_90a)."""
    import torch  # pants: no-infer-dep
    if q.dim() != 4:
        raise ValueError(f"attention: q, k, v must be [b, h, n, d], got {tuple(q.shape)}")
    b, h, n, d = q.shape
    if k.shape != q.shape or v.shape != q.shape or not (q.dtype == k.dtype == v.dtype):
        raise ValueError("attention: q, k, v need one shape [b, h, n, d] and one dtype")
    fmt = FORMATS.get(str(q.dtype).removeprefix("torch."))
    if fmt is None or d not in HEAD_DIMS:
        raise ValueError(f"attention: f16/bf16 with d in {HEAD_DIMS}, got {q.dtype}, d={d}")
    if out is not None and (out.shape != q.shape or out.dtype != q.dtype
                            or not out.is_contiguous() or out.device != q.device):
        raise ValueError("attention: out must be a contiguous tensor of q's shape, dtype "
                         "and device")
    q, k, v = (t.contiguous() for t in (q, k, v))
    o = torch.empty_like(q) if out is None else out
    mod = module(d, fmt, arch, consts, options)
    launch(mod, q, k, v, o, b * h, n, d ** -0.5 if scale is None else scale, causal,
           consts=consts)
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
