"""Tagged enums (an enum with at least one payload variant): layout and declaration.

A tagged enum is an IR struct `{ tag: int32, payload: uintK[n] }`: the tag is the variant's
index (0, 1, 2, ... in declaration order; `= value` on a variant is accepted and ignored),
the payload area starts at max(4, payload alignment) and is large enough for the largest
payload; the size is rounded to that alignment and is at least 8 (`Maybe<int32>` is 8 bytes,
`{Circle(int32), Rect(float64), Empty}` 16, a 16-byte struct payload 24). A payload is read
and written through a pointer to the payload area retyped to the variant's type. Values are
ordinary aggregates: locals, parameters, returns, fields, array elements, copied whole.
"""
from __future__ import annotations

from ...records import dataclass

from . import ast as A
from ..ir.types import I32, U32, U64, ArrayType, StructType, Type
from .scope import TypeSym


@dataclass(eq=False)
class TaggedEnum:
    name: str                                   # source name (or instance name)
    type: StructType
    variants: list[tuple[str, Type | None]]     # (variant, payload type) by tag

    def tag_of(self, variant: str) -> int | None:
        return next((i for i, (n, _) in enumerate(self.variants) if n == variant), None)


def complete_tagged(ctx, e: A.EnumDecl, active: set[str]) -> StructType:
    name = e.internal_name or e.name
    if name in ctx.structs.by_name:
        return ctx.structs.by_name[name]
    outer = ctx.enter(e)                # payload types resolve in e's own module
    active.add(e.name)
    variants: list[tuple[str, Type | None]] = []
    seen: set[str] = set()
    for v in e.variants:
        if v.name in seen:
            ctx.bag.error("E0103", f"duplicate variant `{v.name}`", v.span)
        seen.add(v.name)
        t = None
        if v.payload is not None:
            if isinstance(v.payload, A.NamedType) and v.payload.name in active:
                ctx.bag.error("E0102", f"tagged enum `{e.name}` contains itself (use a "
                              "pointer payload)", v.payload.span)
                continue
            t = ctx.resolve_type(v.payload)
            if isinstance(t, StructType) and not t.fields:
                decl = ctx._struct_decls.get(t.name)
                t = ctx._complete_any(decl, active) if decl else t
            if t.size <= 0:
                ctx.bag.error("E0102", f"a variant payload needs a sized type, not `void`",
                              v.payload.span)
                t = None
        variants.append((v.name, t))
    active.discard(e.name)
    align = max([4] + [t.align for _, t in variants if t is not None])
    size = max([0] + [t.size for _, t in variants if t is not None])
    elem = U64 if align > 4 else U32
    count = max(1, -(-size // elem.size))
    full = StructType(name, (("tag", I32), ("payload", ArrayType(elem, count))))
    ctx.structs.by_name[name] = full
    ctx._bind(e.name, TypeSym(e.name, full))   # replaces the placeholder where it was bound
    ctx.module.structs[name] = full
    ctx.tagged[name] = TaggedEnum(e.name, full, variants)
    for vname, _ in variants:
        ctx.variant_owners.setdefault(vname, []).append(name)
    ctx.globals = outer
    return full
