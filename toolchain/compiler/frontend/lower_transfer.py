"""Lowering of `tensor_transfer_workgroup` (LANGUAGE.md §11, gpu.md "Multidimensional tensor
transfers") to the neutral `tensor.transfer` operation (ir/transfer.py).

    tensor_transfer_workgroup(dst, src, rank: R, element: FMT, [direction: load|store|...,]
        bounds: zero, extentD:, strideD: (bytes), tileD:, element_strideD:, coordinateD:,
        view: uint8*)                                   for D in 0..R-1

extent, stride and tile are positive compile-time constants (stride0 defaults to the
element size and must equal it: dimension 0 is contiguous); element strides are constants
1..8 (default 1); coordinates are signed run-time int32 values (default 0). A load reads
from a global pointer into a workgroup pointer, a store the reverse; both point to the
element's storage type (f16/bf16: uint16, f32: float32, ...). Without `direction:` the
operands' spaces decide: workgroup dst + global src is a load, the reverse a store, any
other pair an E0324 that asks for it. Misuse is E0324 with the option's location.
"""
from __future__ import annotations

from . import ast as A
from ..ir import transfer as X
from ..ir.types import I32, U8, VOID, PtrType
from .typesys import describe

CODE = "E0324"
_PER_DIM = ("extent", "stride", "tile", "element_stride", "coordinate")
OPTIONS = {"rank", "element", "direction", "bounds", "view",
           *(f"{k}{d}" for k in _PER_DIM for d in range(X.MAX_RANK))}


def transfer_call(lw, e: A.Call):
    if len(e.args) != 2:
        raise lw.fail(CODE, "tensor_transfer_workgroup takes two positional arguments "
                      f"(dst, src), found {len(e.args)}", e.span)
    opts = {}
    for name, value, span in e.named_args:
        if name not in OPTIONS:
            raise lw.fail(CODE, f"unknown option `{name}:`", span,
                          help="rank, element, direction, bounds, view, and extentD, strideD, "
                          "tileD, element_strideD, coordinateD for each dimension D")
        if name in opts:
            raise lw.fail(CODE, f"option `{name}:` given twice", span)
        opts[name] = (value, span)
    rank = _constant(lw, opts, "rank", e, required=True)
    if not 1 <= rank <= X.MAX_RANK:
        raise lw.fail(CODE, f"`rank:` must be 1 to {X.MAX_RANK}, not {rank}", opts["rank"][1])
    element = _word(lw, opts, "element", tuple(X.ELEMENTS), e)
    given = None
    if "direction" in opts:
        direction = X.DIRECTIONS[_word(lw, opts, "direction", tuple(X.DIRECTIONS), e)]
    else:                       # the operands' memory spaces decide (see _infer_direction)
        given = (lw.value(e.args[0], None), lw.value(e.args[1], None))
        direction = _infer_direction(lw, e, *given)
    bounds = _word(lw, opts, "bounds", ("zero",), e, default="zero")
    for name, (_, span) in opts.items():
        digit = name[-1]
        if digit.isdigit() and int(digit) >= rank:
            raise lw.fail(CODE, f"`{name}:` names dimension {digit} of a rank-{rank} transfer",
                          span)
    size = X.ELEMENTS[element].size
    extents = tuple(_constant(lw, opts, f"extent{d}", e, required=True) for d in range(rank))
    tiles = tuple(_constant(lw, opts, f"tile{d}", e, required=True) for d in range(rank))
    strides = (_constant(lw, opts, "stride0", e, default=size),) + tuple(
        _constant(lw, opts, f"stride{d}", e, required=True) for d in range(1, rank))
    estrides = tuple(_constant(lw, opts, f"element_stride{d}", e, default=1)
                     for d in range(rank))
    desc = X.TransferDesc(rank, element, direction, extents, strides, tiles, estrides, bounds)
    errs = X.validate_transfer(desc)
    if errs:
        key, msg = errs[0]
        raise lw.fail(CODE, msg, opts[key][1] if key in opts else e.span)
    storage = X.ELEMENTS[element]
    gsp, wsp = "global", "workgroup"
    dst_space, src_space = (wsp, gsp) if desc.loads else (gsp, wsp)
    dst = _pointer(lw, e.args[0], storage, dst_space, "dst", element, given and given[0])
    src = _pointer(lw, e.args[1], storage, src_space, "src", element, given and given[1])
    coords = [lw.rvalue(opts[f"coordinate{d}"][0], I32) if f"coordinate{d}" in opts
              else lw.b.const(I32, 0) for d in range(rank)]
    operands, roles = [dst, src, *coords], ("dst", "src", *X.ROLE_COORDS[:rank])
    if "view" in opts:
        v = lw.value(opts["view"][0], None)
        if not (isinstance(v.type, PtrType) and v.type.pointee == U8):
            raise lw.fail(CODE, f"`view:` must be a uint8* (a provider tensor map), found "
                          f"{describe(v.type)}", opts["view"][1])
        operands.append(v)
        roles += ("view",)
    return lw.b.emit("tensor.transfer", VOID, operands, {"desc": desc, "roles": roles},
                     span=e.span)


def _space(t) -> str:
    return f"a {t.space} pointer" if isinstance(t, PtrType) else describe(t)


def _infer_direction(lw, e: A.Call, dst, src) -> str:
    """Without `direction:`, a workgroup destination and a global source make a load and
    the reverse a store; any other pair (generic pointers, say) cannot decide it."""
    spaces = tuple(v.type.space if isinstance(v.type, PtrType) else None for v in (dst, src))
    if spaces == ("workgroup", "global"):
        return X.DIRECTIONS["load"]
    if spaces == ("global", "workgroup"):
        return X.DIRECTIONS["store"]
    raise lw.fail(CODE, f"tensor_transfer_workgroup needs `direction:` here: `dst` is "
                  f"{_space(dst.type)} and `src` {_space(src.type)}, so their memory "
                  "spaces do not say which way the tile moves", e.span,
                  help="write `direction: load` (global -> workgroup) or `direction: "
                  "store` (workgroup -> global); it is inferred only from a workgroup and "
                  "a global pointer")


def _pointer(lw, expr, storage, space: str, what: str, element: str, v=None):
    v = v if v is not None else lw.value(expr, None)
    t = v.type
    if not (isinstance(t, PtrType) and t.pointee == storage and t.space == space):
        raise lw.fail(CODE, f"`{what}` must be a {space} pointer to {describe(storage)} "
                      f"({element} storage), found {describe(t)}"
                      + (f" in {t.space} memory" if isinstance(t, PtrType) else ""),
                      expr.span, help="a load copies global -> workgroup, a store "
                      "workgroup -> global")
    return v


def _word(lw, opts, key, choices, e, default=None):
    if key not in opts:
        if default is None:
            raise lw.fail(CODE, f"tensor_transfer_workgroup needs `{key}:`", e.span,
                          help="one of " + ", ".join(choices))
        return default
    v, span = opts[key]
    if isinstance(v, A.Name) and v.name in choices:
        return v.name
    raise lw.fail(CODE, f"`{key}:` must be one of {', '.join(choices)}", span)


def _constant(lw, opts, key, e, required=False, default=None) -> int:
    if key not in opts:
        if required:
            raise lw.fail(CODE, f"tensor_transfer_workgroup needs `{key}:`", e.span)
        return default
    v, span = opts[key]
    n = lw.const_int(v)
    if n is None or isinstance(n, bool) or n <= 0:
        raise lw.fail(CODE, f"`{key}:` must be a positive integer constant", span)
    return n

