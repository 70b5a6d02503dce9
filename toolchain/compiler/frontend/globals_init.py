"""Top-level `var`/`const`/`extern var` declarations and their constant initializers.

Integer consts (typed or not) are folded: no storage, uses see the value. Every other global
gets an ir Global whose `init` is a list of (byte offset, scalar type, value) items; bytes not
covered are zero. Initializers must be compile-time constant (E0013): numbers, `true/false`,
folded consts and enum variants, string literals, `&global`, function names, `0` for null
pointers, and the aggregate forms `[a, b]`, `[v; n]`, `{f: v}`.
"""
from __future__ import annotations

from . import ast as A
from ..ir import Function, Global
from ..ir.types import I64, U8, U64, ArrayType, FnPtrType, PtrType, StructType, Type
from .const_override import is_format_const
from .consteval import NOT_CONST
from .scope import FnSym, VarSym
from .typesys import STRING, describe, literal_type


def lower_global(ctx, d: A.VarDecl) -> None:
    name = d.internal_name or d.name
    if d.name in ctx.globals.names or name in ctx.module.globals:
        ctx.bag.error("E0103", f"`{d.name}` is already defined", d.span)
        return
    if d.storage != "none":
        ctx.bag.error("E0310", f"`{d.storage} var` is only legal directly inside a GPU "
                      "kernel", d.span)
        return
    if d.type is None and not d.is_const:
        ctx.bag.error("E0003", f"`var {d.name}` needs a type", d.span)
        return
    if is_format_const(d) and ctx.globals.lookup(d.init.name) is None:
        ctx.define(d.name, VarSym(d.name, I64, "format", d.init.name, d.span, is_const=True),
                   d.span)         # `const ELEM = f16;` names a tile format (E0355 as a value)
        return
    t = ctx.value_type(d.type, "a global") if d.type is not None else None
    enum = ctx.enum_of_type(d.type)
    if d.is_extern:
        g = ctx.b.global_var(name, t, linkage="import", link_name=d.link_name)
        g.span = d.span             # an unresolvable link symbol points here
        ctx.define(d.name, VarSym(d.name, t, "global", g, d.span, enum=enum), d.span)
        return
    if d.is_const and d.init is not None and (t is None or t.is_int):
        v = ctx.const_eval(d.init)
        if isinstance(v, int) and not isinstance(v, bool):
            t = t or literal_type(v)
            ctx.define(d.name, VarSym(d.name, t, "const", t.wrap(v), d.span, enum=enum,
                                      is_const=True), d.span)
            return
        if t is None and isinstance(v, float):
            t = ctx.resolve_type(A.NamedType("float64", span=d.span))
    if t is None:
        ctx.bag.error("E0013", f"cannot infer the type of `{d.name}`; give it a type",
                      d.span)
        return
    items = [] if d.init is None else init_items(ctx, t, d.init, 0)
    g = ctx.b.global_var(name, t, items or None, constant=d.is_const,
                         linkage="export" if d.exported else "internal")
    ctx.define(d.name, VarSym(d.name, t, "global", g, d.span, enum=enum,
                              is_const=d.is_const), d.span)


def _bad(ctx, e: A.Expr, t: Type) -> list:
    ctx.bag.error("E0013", f"initializer of type {describe(t)} must be a compile-time "
                  "constant", e.span)
    return []


def init_items(ctx, t: Type, e: A.Expr, off: int) -> list:
    """Flatten a constant initializer of type `t` at byte offset `off`."""
    if isinstance(t, ArrayType):
        return _array_items(ctx, t, e, off)
    if t == STRING:
        if not isinstance(e, A.StrLit):
            return _bad(ctx, e, t)
        g = ctx.b.string_literal(e.value)
        return [(off, STRING.fields[0][1], g), (off + 8, U64, len(e.value))]
    if isinstance(t, StructType):
        if t.name in ctx.tagged:
            return _tagged_items(ctx, ctx.tagged[t.name], e, off)
        return _struct_items(ctx, ctx.structs.full(t), e, off)
    if isinstance(t, (PtrType, FnPtrType)):
        return _pointer_item(ctx, t, e, off)
    v = ctx.const_eval(e)
    if v is NOT_CONST:
        return _bad(ctx, e, t)
    if t.is_int or t.is_bool:
        if isinstance(v, float):
            ctx.bag.error("E0004", f"float to {describe(t)} needs a cast", e.span)
            return []
        return [(off, t, t.wrap(int(v)) if t.is_int else bool(v))] if v else []
    return [(off, t, float(v))] if v else []


def _pointer_item(ctx, t: Type, e: A.Expr, off: int) -> list:
    if isinstance(e, A.StrLit) and isinstance(t, PtrType) and t.pointee == U8:
        return [(off, t, ctx.b.string_literal(e.value))]
    target = e.operand if isinstance(e, A.AddrOf) else e
    if isinstance(target, A.Name):
        sym = ctx.globals.lookup(target.name)
        if isinstance(sym, VarSym) and isinstance(sym.storage, Global) and \
                isinstance(e, A.AddrOf):
            return [(off, t, sym.storage)]
        if isinstance(sym, FnSym) and isinstance(sym.fn, Function):
            return [(off, t, sym.fn)]
    v = ctx.const_eval(e)
    if v is NOT_CONST:
        return _bad(ctx, e, t)
    why = pointer_constant_error(v, t)
    if why is not None:
        ctx.bag.error(*why, e.span)
    return []


def pointer_constant_error(v, t: Type) -> tuple[str, str] | None:
    """(code, message) of why the constant v cannot initialize the pointer t, or None: it
    can, being the integer 0 (the null pointer). A bool or float constant is no integer,
    so no cast would make it one."""
    if isinstance(v, (bool, float)):
        return "E0201", (f"type mismatch: expected {describe(t)}, found "
                         f"{'bool' if isinstance(v, bool) else 'float64'}")
    if v == 0:
        return None
    return "E0203", f"integer to {describe(t)} needs a cast"


def _array_items(ctx, t: ArrayType, e: A.Expr, off: int) -> list:
    if isinstance(e, A.StrLit) and t.elem == U8:
        if len(e.value) > t.count:
            ctx.bag.error("E0201", f"string of {len(e.value)} bytes does not fit "
                          f"{describe(t)}", e.span)
        return [(off + i, U8, b) for i, b in enumerate(e.value[:t.count]) if b]
    if isinstance(e, A.ArrayRepeat):
        n = ctx.const_eval(e.count)
        if not isinstance(n, int) or n != t.count:
            ctx.bag.error("E0201", f"`[v; n]` must have n = {t.count} for {describe(t)}",
                          e.count.span)
            return []
        one = init_items(ctx, t.elem, e.value, 0)
        return [(off + i * t.elem.size + o, ty, v) for i in range(t.count)
                for o, ty, v in one]
    if not isinstance(e, A.ArrayLit):
        return _bad(ctx, e, t)
    if len(e.elems) > t.count:
        ctx.bag.error("E0201", f"{len(e.elems)} elements do not fit {describe(t)}", e.span)
    out = []
    for i, el in enumerate(e.elems[:t.count]):
        out += init_items(ctx, t.elem, el, off + i * t.elem.size)
    return out


def _struct_items(ctx, t: StructType, e: A.Expr, off: int) -> list:
    if not isinstance(e, A.StructLit):
        return _bad(ctx, e, t)
    out = []
    for f in e.fields:
        try:
            i = t.field_index(f.name)
        except KeyError:
            ctx.bag.error("E0205", f"struct `{t.name}` has no field `{f.name}`", f.span)
            continue
        out += init_items(ctx, t.fields[i][1], f.value, off + t.offsets[i])
    return out


def _tagged_items(ctx, enum, e: A.Expr, off: int) -> list:
    """A tagged-enum constant: `Plus`, `Number(42)`, `Token.Number(42)` (constant payload)."""
    args: list = []
    name = None
    if isinstance(e, A.Call):
        args, e = e.args, e.callee
    if isinstance(e, A.Name):
        name = e.name
    elif isinstance(e, A.Member) and isinstance(e.base, A.Name) and \
            e.base.name == enum.name:
        name = e.name
    tag = None if name is None else enum.tag_of(name)
    if tag is None:
        return _bad(ctx, e, enum.type)
    payload_t = enum.variants[tag][1]
    if len(args) != (0 if payload_t is None else 1):
        ctx.bag.error("E0108", f"constructor `{name}` expects "
                      f"{0 if payload_t is None else 1} argument(s), got {len(args)}", e.span)
        return []
    items = [(off, enum.type.fields[0][1], tag)] if tag else []
    if payload_t is not None:
        items += init_items(ctx, payload_t, args[0], off + enum.type.offsets[1])
    return items
