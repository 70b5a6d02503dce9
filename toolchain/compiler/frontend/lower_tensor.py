"""Lowering of tensor_mma / tensor_matmul / tensor_epilogue (LANGUAGE.md §11, gpu.md
"Cooperative tensor operations") to one neutral IR instruction each (ir/tensor.py).

Every named option is parsed here and checked with a located diagnostic:
  E0340 a tensor_mma/tensor_matmul option (unknown, repeated, bad word, bad constant,
        inconsistent descriptor), E0341 tensor_matmul region controls,
  E0342 a tensor_epilogue option (or one fused on tensor_matmul),
  E0343 an operand whose type is not the format's storage type (f16/bf16 uint16*,
        f32/tf32 float32*, f64 float64*, i8 int8*, i32 int32*, everything else uint8*).
Static options become descriptor fields; `lda`..`ldd`, `ldsa`/`ldsb`, `ldbias` may instead
be runtime integers and the pointer/scalar options become operands. A runtime leading
dimension is any integer of up to 64 bits; the descriptor carries it as u32 (gpu.md: "in
the descriptor's uint32 range"), so a wider value is checked: with --gpu-checks a value
above 4294967295 traps before the operation, otherwise its low 32 bits are used
(docs/reference/language_rules.md). Epilogue scalars (alpha, beta, clamp bounds) have exactly the
epilogue's compute type (float32, or float64 for f64): no implicit conversion. No target
question is asked here: capability refusals belong to the backends.
"""
from __future__ import annotations

import re

from . import ast as A
from ..ir import tensor as T
from ..ir.types import U32, U64, VOID, PtrType
from .typesys import describe

_SHAPE3 = re.compile(r"m(\d+)n(\d+)k(\d+)")
_SHAPE2 = re.compile(r"m(\d+)n(\d+)")
_WORDS = {
    "a_type": T.FORMATS, "b_type": T.FORMATS, "accumulator_type": T.FORMATS,
    "result_type": T.FORMATS, "input_type": T.FORMATS, "output_type": T.FORMATS,
    "a_layout": T.LAYOUTS, "b_layout": T.LAYOUTS, "c_layout": T.LAYOUTS,
    "d_layout": T.LAYOUTS, "math": T.MATHS, "sparsity": T.SPARSITY,
    "rounding": T.ROUNDING, "overflow": T.OVERFLOW, "a_scale_mode": T.SCALE_MODES,
    "b_scale_mode": T.SCALE_MODES, "a_scale_type": T.SCALE_TYPES,
    "b_scale_type": T.SCALE_TYPES, "a_packing": T.PACKINGS, "b_packing": T.PACKINGS,
    "scope": T.SCOPES,
}
_BOOLS = ("transpose_a", "transpose_b")
_LDS = ("lda", "ldb", "ldc", "ldd", "ldsa", "ldsb")
_LD_ALIASES = {"a_scale_ld": "ldsa", "b_scale_ld": "ldsb"}
_PTRS = ("metadata", "a_scale", "b_scale")
MMA_OPTIONS = {"shape", "m", "n", "k", *_WORDS, *_BOOLS, *_LDS, *_LD_ALIASES, *_PTRS}

_EPI_WORDS = {"element_type": T.EPILOGUE_TYPES, "layout": T.LAYOUTS,
              "bias_mode": T.BIAS_MODES, "bias_layout": T.LAYOUTS,
              "activation": T.ACTIVATIONS, "scope": T.SCOPES}
_EPI_SCALARS = ("alpha", "beta", "clamp_min", "clamp_max")
EPILOGUE_OPTIONS = {"shape", "m", "n", "ldd", "leading_dimension", "bias", "ldbias",
                    *_EPI_WORDS, *_EPI_SCALARS}
# tensor_epilogue options a tensor_matmul fuses (docs/reference/gemm.md "Fused epilogue"); the tile's
# shape, element type, layout, stride and scope are the matmul's own
_FUSED_WORDS = ("bias_mode", "bias_layout", "activation")
FUSED_OPTIONS = {"bias", "ldbias", *_FUSED_WORDS, *_EPI_SCALARS}
# tensor_matmul only: `persistent: G` (a positive constant) tiles the whole area from the
# origin to (M, N) over the grid's workgroups (docs/reference/gemm.md "Persistent tile loop")
# and `schedule: cooperative|pingpong` picks how the sm_90a pipeline's two consumer
# warpgroups share the work (docs/reference/gemm.md "Ping-pong schedule"); `cluster: 2`
# pairs a persistent loop's workgroups (docs/reference/gemm.md "Clusters of 2")
# `workspace: w` (a uint32*) lets the cooperative pipeline split the last round's tiles
# along K (docs/reference/gemm.md "Stream-K")
MATMUL_ONLY = {"persistent", "schedule", "cluster", "workspace"}


def tensor_call(lw, e: A.Call, name: str):
    """Entry from GpuMixin.gpu_call for every `tensor_*` name."""
    lw.kernel_only(f"`{name}`", e.span)
    if name == "tensor_mma":
        return _mma(lw, e, matmul=False)
    if name == "tensor_matmul":
        return _mma(lw, e, matmul=True)
    if name == "tensor_epilogue":
        return _epilogue(lw, e)
    if name == "tensor_transfer_workgroup":
        from .lower_transfer import transfer_call
        return transfer_call(lw, e)
    raise lw.fail("E0101", f"undefined function `{name}`", e.callee.span)


# ---------------------------------------------------------------- option helpers
def _options(lw, e: A.Call, allowed: set[str], code: str) -> dict:
    out: dict[str, tuple[A.Expr, object]] = {}
    for name, value, span in e.named_args:
        key = _LD_ALIASES.get(name, name)
        if name == "leading_dimension":
            key = "ldd"
        if name not in allowed:
            raise lw.fail(code, f"unknown option `{name}:`", span,
                          help="expected one of " + ", ".join(sorted(allowed)))
        if key in out:
            raise lw.fail(code, f"option `{name}:` given twice", span)
        out[key] = (value, span)
    return out


def _word(lw, opts, key, choices, code, default=None):
    if key not in opts:
        return default
    v, _ = opts[key]
    if isinstance(v, A.Name) and v.name in choices:
        return v.name
    raise lw.fail(code, f"`{key}:` must be one of {', '.join(choices)}", v.span)


def _const(lw, opts, key, code, default=None):
    if key not in opts:
        return default
    v, _ = opts[key]
    n = lw.const_int(v)
    if n is None or isinstance(n, bool) or n <= 0:
        raise lw.fail(code, f"`{key}:` must be a positive integer constant", v.span)
    return n


def _bool(lw, opts, key, code):
    if key not in opts:
        return False
    v, _ = opts[key]
    if isinstance(v, A.BoolLit):
        return v.value
    raise lw.fail(code, f"`{key}:` must be true or false", v.span)


def _shape(lw, opts, code, three: bool, at) -> tuple[int, ...]:
    pat, keys = (_SHAPE3, ("m", "n", "k")) if three else (_SHAPE2, ("m", "n"))
    if "shape" in opts:
        v, span = opts["shape"]
        m = pat.fullmatch(v.name) if isinstance(v, A.Name) else None
        if m is None or any(k in opts for k in keys):
            form = "mMnNkK" if three else "mMnN"
            raise lw.fail(code, f"`shape:` must be one {form} word (and not combined with "
                          f"{'/'.join(f'`{k}:`' for k in keys)})", v.span)
        dims = tuple(int(g) for g in m.groups())
    else:
        dims = tuple(_const(lw, opts, k, code) for k in keys)
        if None in dims:
            raise lw.fail(code, f"give `shape:` or all of {', '.join(keys)}", at)
    for d in dims:
        if d <= 0:
            raise lw.fail(code, "tensor shape dimensions must be positive",
                          opts.get("shape", (None, at))[1])
    return dims


def _ld(lw, opts, key, code, named):
    """A leading dimension: a static int (returned) or a runtime u32 operand (in named)."""
    if key not in opts:
        return None
    v, _ = opts[key]
    n = lw.const_int(v)
    if n is not None:
        if n <= 0:
            raise lw.fail(code, f"`{key}:` must be positive, found {n}", v.span)
        return n
    val = lw.value(v, U32)
    if not val.type.is_int or val.type.bits > 64:
        raise lw.fail(code, f"runtime `{key}:` must be an integer, found "
                      f"{describe(val.type)}", v.span, help=f"write `{key}: (uint32)value`")
    if val.type.bits > 32:           # the descriptor's uint32 range, checked (module doc)
        wide = lw.b.convert(val, U64)
        ok = lw.b.cmp("le", wide, lw.b.const(U64, (1 << 32) - 1), span=v.span)
        lw.b.intrinsic("debug.assert", VOID, [ok], span=v.span)
    named[key] = lw.b.convert(val, U32)
    return None


def _pointer(lw, expr: A.Expr, fmt_type, what: str, why: str):
    v = lw.value(expr, None)
    if not (isinstance(v.type, PtrType) and v.type.pointee == fmt_type):
        raise lw.fail("E0343", f"{what} must be a {describe(PtrType(fmt_type))} ({why}), "
                      f"found {describe(v.type)}", expr.span)
    return v


# ---------------------------------------------------------------- tensor_mma / matmul
def _types(lw, opts, at) -> tuple[str, str, str, str]:
    code = "E0340"
    inp = _word(lw, opts, "input_type", T.FORMATS, code)
    out = _word(lw, opts, "output_type", T.FORMATS, code)
    got = {}
    for key, conv in (("a_type", inp), ("b_type", inp), ("accumulator_type", out),
                      ("result_type", out)):
        own = _word(lw, opts, key, T.FORMATS, code)
        if own is not None and conv is not None:
            raise lw.fail(code, f"`{key}:` conflicts with `"
                          f"{'input' if key[0] in 'ab' else 'output'}_type:`",
                          opts[key][0].span)
        got[key] = own or conv
        if got[key] is None:
            raise lw.fail(code, f"tensor operation needs `{key}:` (or "
                          f"`{'input' if key[0] in 'ab' else 'output'}_type:`)", at)
    return got["a_type"], got["b_type"], got["accumulator_type"], got["result_type"]


def _descriptor(lw, e: A.Call, opts, named) -> T.TensorDesc:
    code = "E0340"
    persistent = _const(lw, opts, "persistent", code, 0)
    schedule = _word(lw, opts, "schedule", T.SCHEDULES, code, "cooperative")
    cluster = _const(lw, opts, "cluster", code, 1)
    m, n, k = _shape(lw, opts, code, True, e.span)
    a_t, b_t, acc_t, res_t = _types(lw, opts, e.span)
    words = {key: _word(lw, opts, key, choices, code)
             for key, choices in _WORDS.items() if not key.endswith(("put_type", "_type"))
             or key.endswith("scale_type")}
    words = {k2: v for k2, v in words.items() if v is not None}
    lds = {key: _ld(lw, opts, key, code, named) for key in _LDS}
    desc = T.TensorDesc(m, n, k, a_t, b_t, acc_t, res_t, **words,
                        transpose_a=_bool(lw, opts, "transpose_a", code),
                        transpose_b=_bool(lw, opts, "transpose_b", code), **lds,
                        persistent=persistent, schedule=schedule, cluster=cluster)
    roles = tuple(r for r in T.MMA_ROLES if r in named or r in _PTRS and r in opts)
    errs = T.validate_desc(desc, roles)
    if errs:
        key, msg = errs[0]
        raise lw.fail(code, msg, opts[key][1] if key in opts else e.span, help=_help(key))
    for key in _PTRS:                  # after the descriptor: a scale's type depends on it
        if key in opts:
            ty = T.scale_storage(desc, key[0]) if key != "metadata" else T.U8
            named[key] = _pointer(lw, opts[key][0], ty, f"`{key}:`",
                                  "a byte table" if ty == T.U8 else "one f32 scale")
    return desc


# A help line per descriptor option a contradiction is reported at (E0340).
_HELP = {
    "packing": "sub-byte packing (`packed`, `dense_subbyte`) is only for e2m3, e3m2, e2m1, "
               "i4, u4 and b1; leave the packing option out for byte-sized formats",
    "scale_mode": "a block-scaled operand names its scale format and table, e.g. "
                  "`{s}_scale_type: ue8m0, {s}_scale: table` (a uint8* pointer)",
    "scale": "give `{s}_scale_mode: block32` (or block16/per_tensor) with the table",
    "scale_type": "give `{s}_scale_mode:` too, or drop `{s}_scale_type:`",
    "lds": "scale-table leading dimensions belong to block-scaled operands",
    "rounding": "leave `rounding:` out (default) for integer formats",
    "math": "b1 operands use `math: xor_popcount` or `and_popcount`; others multiply_add",
    "metadata": "structured sparsity and `metadata:` go together",
    "persistent": "a persistent tile loop runs whole workgroups over the tiles: add "
                  "`scope: workgroup` or drop `persistent:`",
    "schedule": "the schedule splits a workgroup region between its consumer warpgroups: "
                "add `scope: workgroup` or drop `schedule:`",
    "cluster": "clusters of 2 pair the workgroups of a persistent tile loop: add "
               "`scope: workgroup, persistent: 8` or drop `cluster:`",
}


def _help(key: str) -> str:
    side, _, rest = key.partition("_")
    if key in ("ldsa", "ldsb"):
        return _HELP["lds"]
    if side in ("a", "b") and rest in _HELP:
        return _HELP[rest].format(s=side)
    return _HELP.get(key, "see the tensor descriptor rules in docs/reference/language_rules.md")


def _control(lw, expr: A.Expr):
    n = lw.const_int(expr)
    v = lw.value(expr, U32)
    if (n is not None and not 0 <= n < 1 << 32) or \
            not (v.type.is_int and not v.type.signed and v.type.bits <= 32):
        raise lw.fail("E0341", f"tensor_matmul region controls are unsigned integers of at "
                      f"most 32 bits, found {describe(v.type)}", expr.span)
    return lw.b.convert(v, U32)


def _mma(lw, e: A.Call, matmul: bool):
    what = "tensor_matmul" if matmul else "tensor_mma"
    npos = 9 if matmul else 4
    if len(e.args) != npos:
        raise lw.fail("E0341" if matmul else "E0340", f"{what} takes {npos} positional "
                      f"arguments ({'A, B, C, D, row, column, M, N, K' if matmul else 'A, B, C, D'}"
                      f"), found {len(e.args)}", e.span)
    if not matmul:
        for name, _, span in e.named_args:
            if name in FUSED_OPTIONS:
                raise lw.fail("E0340", f"`{name}:` is a fused-epilogue option of "
                              "tensor_matmul; a tensor_mma tile takes a separate "
                              "tensor_epilogue", span)
    opts = _options(lw, e, MMA_OPTIONS | (FUSED_OPTIONS | MATMUL_ONLY if matmul else set()),
                    "E0340")
    fused = {k: opts.pop(k) for k in list(opts) if k in FUSED_OPTIONS}
    named: dict = {}
    desc = _descriptor(lw, e, opts, named)
    ptrs = [_pointer(lw, arg, T.storage_type(fmt), f"operand {role}", f"{fmt} storage")
            for arg, role, fmt in zip(e.args[:4], "ABCD",
                                      (desc.a_type, desc.b_type, desc.accumulator_type,
                                       desc.result_type))]
    if not matmul:
        return lw.b.tensor_mma(desc, *ptrs, named, span=e.span)
    scale_lds = tuple(f"lds{s}" for s in "ab"
                      if getattr(desc, f"{s}_scale_mode") not in ("none", "per_tensor"))
    for key in ("lda", "ldb", "ldc", "ldd", *scale_lds):
        if getattr(desc, key) is None and key not in named:
            what = "scale tables" if key.startswith("lds") else "matrices"
            raise lw.fail("E0341", f"tensor_matmul needs an explicit `{key}:` (whole "
                          f"{what} have no default leading dimension)", e.span,
                          help=f"add `{key}: <stride>` (a constant or a uniform integer)")
    controls = [_control(lw, a) for a in e.args[4:]]
    if "workspace" in opts:
        _workspace(lw, e, desc, opts, named)
    epi = _fused(lw, e, desc, fused, named) if fused else None
    return lw.b.tensor_matmul(desc, *ptrs, controls, named, span=e.span, epilogue=epi)


def _workspace(lw, e: A.Call, desc: T.TensorDesc, opts: dict, named: dict) -> None:
    """`workspace: w`: a uint32* the stream-K split meets in; only a persistent
    workgroup loop in the cooperative schedule (or auto, whose cooperative branch
    splits), alone or in clusters of 2, has a last round to split (E0340)."""
    expr, at = opts["workspace"]
    why = None
    if desc.scope != "workgroup" or not desc.persistent:
        why = "`workspace:` splits the last round of a persistent tile loop"
        help_ = "add `scope: workgroup, persistent: 8` or drop `workspace:`"
    elif desc.schedule == "pingpong":
        why = "`workspace:` splits the cooperative schedule's tiles, not ping-pong's"
        help_ = "use `schedule: cooperative` or `schedule: auto`, or drop `workspace:`"
    if why:
        raise lw.fail("E0340", why, at, help=help_)
    named["workspace"] = _pointer(lw, expr, U32, "`workspace:`",
                                  "the stream-K counters and partial sums")


def _fused(lw, e: A.Call, desc: T.TensorDesc, opts: dict, named: dict) -> T.EpilogueDesc:
    """tensor_epilogue's options on a tensor_matmul region (E0342; bias pointer E0343):
    the same words and scalars, the bias in the result's storage type."""
    code, res = "E0342", desc.result_type
    if res not in T.EPILOGUE_TYPES:
        key = next(iter(opts))
        raise lw.fail(code, f"epilogue options need a floating-point result (f16, bf16, f32 "
                      f"or f64), found {res}", opts[key][1],
                      help="an integer result has no fused epilogue")
    words = {k: v for k in _FUSED_WORDS
             for v in [_word(lw, opts, k, _EPI_WORDS[k], code)] if v is not None}
    ldbias = _ld(lw, opts, "ldbias", code, named)
    epi = T.matmul_epilogue(desc, ldbias=ldbias, **words)
    _epilogue_operands(lw, opts, named, res, f"the {res} result's storage")
    roles = tuple(r for r in (*T.MMA_ROLES, *T.MATMUL_EPILOGUE_ROLES) if r in named)
    _epilogue_errors(lw, e, opts, T.validate_matmul_epilogue(desc, epi, roles), epi,
                     lambda key: "the fused epilogue takes tensor_epilogue's options "
                     "(bias_mode: row|column|matrix with bias:, alpha:, beta:, activation: "
                     "relu|clamp with clamp_min:/clamp_max:); see docs/reference/gemm.md")
    return epi


def _epilogue_operands(lw, opts: dict, named: dict, fmt: str, storage: str) -> None:
    """The bias pointer (fmt's storage type) and the scalars (its compute type)."""
    if "bias" in opts:
        named["bias"] = _pointer(lw, opts["bias"][0], T.storage_type(fmt), "`bias:`",
                                 storage)
    for key in _EPI_SCALARS:
        if key in opts:
            named[key] = _scalar(lw, opts[key][0], T.compute_type(fmt), key, fmt)


def _epilogue_errors(lw, e: A.Call, opts: dict, errs: list, desc, help_for) -> None:
    """Raise the first epilogue error (E0342) at its option, with help_for(option)."""
    if "bias_layout" in opts and desc.bias_mode != "matrix":
        errs.append(("bias_layout", "`bias_layout:` is the layout of a matrix bias; it needs "
                     f"`bias_mode: matrix`, not {desc.bias_mode}"))
    if errs:
        key, msg = errs[0]
        raise lw.fail("E0342", msg, opts[key][1] if key in opts else e.span,
                      help=help_for(key))


# ---------------------------------------------------------------- tensor_epilogue
def _epilogue(lw, e: A.Call):
    code = "E0342"
    if len(e.args) != 1:
        raise lw.fail(code, f"tensor_epilogue takes one positional argument (D), found "
                      f"{len(e.args)}", e.span)
    opts = _options(lw, e, EPILOGUE_OPTIONS, code)
    m, n = _shape(lw, opts, code, False, e.span)
    elem = _word(lw, opts, "element_type", T.EPILOGUE_TYPES, code)
    if elem is None:
        raise lw.fail(code, "tensor_epilogue needs `element_type:`", e.span)
    words = {k: v for k, choices in _EPI_WORDS.items() if k != "element_type"
             for v in [_word(lw, opts, k, choices, code)] if v is not None}
    named: dict = {}
    ld = _ld(lw, opts, "ldd", code, named)
    ldbias = _ld(lw, opts, "ldbias", code, named)
    desc = T.EpilogueDesc(m, n, elem, ld=ld, ldbias=ldbias, **words)
    d = _pointer(lw, e.args[0], T.storage_type(elem), "operand D", f"{elem} storage")
    _epilogue_operands(lw, opts, named, elem, f"{elem} storage")
    errs = T.validate_epilogue(desc, tuple(r for r in T.EPILOGUE_ROLES if r in named))
    _epilogue_errors(lw, e, opts, errs, desc, lambda key: (
        "a row or column bias is a vector (no layout or leading dimension); use "
        "`bias_mode: matrix` for a matrix bias" if key in ("ldbias", "bias_layout") else
        "see the tensor_epilogue rules in docs/reference/language_rules.md"))
    return lw.b.tensor_epilogue(desc, d, named, span=e.span)


def _scalar(lw, expr: A.Expr, ct, key: str, elem: str):
    """An epilogue scalar of exactly the compute type `ct` (a literal adopts it)."""
    if lw.untyped(expr):
        return lw.rvalue(expr, ct)
    v = lw.value(expr, ct)
    if v.type != ct:
        raise lw.fail("E0342", f"`{key}:` must be a {describe(ct)} (the {elem} epilogue's "
                      f"element type), found {describe(v.type)}", expr.span,
                      help=f"write `{key}: ({describe(ct)})value`")
    return v
