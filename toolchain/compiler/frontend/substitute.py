"""Copying syntax trees with type names replaced: the one tool behind `Self` in impls and
generic instantiation (generics.py, methods.py).

`clone(node, subst)` deep-copies an AST node (lists, NamedArg/FieldInit/CaseRange tuples
included). Every unqualified `NamedType` whose name is a key of `subst` (and which has no
type arguments of its own) becomes a fresh copy of the mapped TypeExpr; `ty` slots start
empty. Spans are shared (they are immutable), so diagnostics in a copy point at the
template's source.
"""
from __future__ import annotations

from . import ast as A
from ...records import field_names
from ..diagnostics import Span
from .typesys import INSTANCE_SPELLING

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(n for n in field_names(cls) if n not in ("span", "ty"))
    return names


def clone(node, subst: dict[str, A.TypeExpr] | None = None):
    subst = subst or {}
    if isinstance(node, A.NamedType) and node.qualifier is None and not node.args and \
            node.name in subst:
        return clone(subst[node.name])
    if isinstance(node, A.Node):
        out = object.__new__(type(node))
        d = out.__dict__
        d["span"] = node.span
        if isinstance(node, A.Expr):
            d["ty"] = None
        for name in _fields(type(node)):
            d[name] = clone(getattr(node, name), subst)
        # attributes set outside the constructor (e.g. by the module loader) ride along
        for k, v in node.__dict__.items():
            if k not in d:
                d[k] = v
        return out
    if isinstance(node, list):
        return [clone(x, subst) for x in node]
    if isinstance(node, tuple) and type(node) is not Span:
        vals = [clone(x, subst) for x in node]
        return type(node)(*vals) if hasattr(node, "_fields") else tuple(vals)
    return node


def spell(t: A.TypeExpr | None, shown: bool = False) -> str:
    """The canonical spelling of a type expression: `Pair<int32,float64*>`, `int8[4]`.
    `shown`: as diagnostics show it, `Pair<int32, float64*>`, with an instance that an
    inner substitution already renamed (`Box__int64`) shown as written (`Box<int64>`)."""
    if t is None:
        return "void"
    sep, arrow = (", ", " -> ") if shown else (",", "->")
    if isinstance(t, A.NamedType):
        if shown and not t.args and not t.qualifier:
            return INSTANCE_SPELLING.get(t.name, t.name)
        base = f"{t.qualifier}.{t.name}" if t.qualifier else t.name
        return base + (f"<{sep.join(spell(a, shown) for a in t.args)}>" if t.args else "")
    if isinstance(t, A.PointerType):
        return _operand(t.elem, shown) + "*"
    if isinstance(t, A.ArrayType):
        return f"{_operand(t.elem, shown)}[{t.size}]"
    if isinstance(t, A.FnPtrType):
        kw = "Fn" if t.is_closure else "fn"
        return f"{kw}({sep.join(spell(p, shown) for p in t.params)}){arrow}{spell(t.ret, shown)}"
    return "?"


def _operand(t: A.TypeExpr, shown: bool) -> str:
    """A pointer's or array's element: a function type in parentheses (its `-> R` would
    otherwise take the `*` or `[N]`)."""
    s = spell(t, shown)
    return f"({s})" if isinstance(t, A.FnPtrType) else s


def mangle_part(t: A.TypeExpr) -> str:
    """A type spelling as part of an identifier: `*` -> `_ptr`, other punctuation -> `_`."""
    s = spell(t).replace("*", "_ptr")
    return "".join(c if c.isalnum() or c == "_" else "_" for c in s)
