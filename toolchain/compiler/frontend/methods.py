"""Struct methods, traits and `impl` blocks, lowered to free functions (the later tier).

- `method m(...)` in `struct S` becomes `S_m(this: S, ...)`: the receiver is a copy (by
  value). The name is visible (`S_m(s)` is a legal call, and a user `S_m` collides).
- `impl Tr for Ty { fn m(self: Self, ...) }` becomes `__trait_Tr__<Ty>__m` with `Self`
  replaced by `Ty` (punctuation in `Ty` -> `_`, `*` -> `_ptr`); impls are checked against
  their trait (missing method, parameter count/types, return type: E0019).
- Every lifted function is recorded as a `MethodEntry(for_type, name, fn_name)`; the
  checker resolves `for_type` once types are declared, and a call `recv.m(args)` is
  resolved statically by the receiver's checked type (lower_later.py): a method of that
  exact type, else (for a pointer receiver) of its pointee, passed by value. Dispatch is
  always static; traits are not types.
"""
from __future__ import annotations

from collections import namedtuple

from . import ast as A
from .substitute import clone, mangle_part, spell

MethodEntry = namedtuple("MethodEntry", ("for_type", "name", "fn_name"))


def check_traits(items: list[A.Stmt], bag) -> dict[str, A.TraitDecl]:
    traits: dict[str, A.TraitDecl] = {}
    for d in items:
        if isinstance(d, A.TraitDecl):
            if d.name in traits:
                bag.error("E0019", f"duplicate trait declaration `{d.name}`", d.span)
            traits[d.name] = d
    return traits


def lift_impls(items: list[A.Stmt], traits: dict[str, A.TraitDecl], bag, origin=None):
    """The impl functions as FnDecls, their MethodEntries, and the (trait, type spelling)
    pairs that generic bounds are checked against. `origin` (if given) gets
    id(function) -> its impl declaration."""
    fns: list[A.FnDecl] = []
    entries: list[MethodEntry] = []
    seen: set[tuple[str, str]] = set()
    for d in items:
        if not isinstance(d, A.ImplDecl):
            continue
        trait = traits.get(d.trait)
        ty = spell(d.for_type)
        if trait is None:
            bag.error("E0019", f"unknown trait `{d.trait}` in impl declaration",
                      d.trait_span or d.span)
            continue
        if (d.trait, ty) in seen:
            bag.error("E0019", f"duplicate impl `{d.trait} for {ty}`", d.span)
            continue
        seen.add((d.trait, ty))
        self_map = {"Self": d.for_type}
        _check_against_trait(d, trait, self_map, bag)
        for m in d.methods:
            f = clone(m, self_map)
            f.name = f"__trait_{d.trait}__{mangle_part(d.for_type)}__{m.name}"
            fns.append(f)
            if origin is not None:
                origin[id(f)] = d
            entries.append(MethodEntry(clone(d.for_type), m.name, f.name))
    return fns, entries, seen


def _check_against_trait(d: A.ImplDecl, trait: A.TraitDecl, self_map, bag) -> None:
    have = {m.name: m for m in d.methods}
    for sig in trait.methods:
        m = have.get(sig.name)
        if m is None:
            bag.error("E0019", f"impl `{d.trait} for {spell(d.for_type)}` is missing trait "
                      f"method `{sig.name}`", d.span)
            continue
        if len(m.params) != len(sig.params):
            bag.error("E0019", f"impl method `{m.name}` has a signature that does not match "
                      f"trait `{d.trait}`", m.span)
            continue
        for i, (p, q) in enumerate(zip(m.params, sig.params)):
            if spell(clone(p.type, self_map)) != spell(clone(q.type, self_map)):
                bag.error("E0019", f"impl method `{m.name}` parameter {i + 1} does not match "
                          f"trait `{d.trait}`", p.span)
        if spell(clone(m.ret, self_map)) != spell(clone(sig.ret, self_map)):
            bag.error("E0019", f"impl method `{m.name}` return type does not match trait "
                      f"`{d.trait}`", m.span)


def lift_struct_methods(items: list[A.Stmt], origin=None):
    """`S_m(this: S, ...)` for every method of every (concrete) struct. `origin` (if
    given) gets id(function) -> its struct declaration."""
    fns: list[A.FnDecl] = []
    entries: list[MethodEntry] = []
    for d in items:
        if not isinstance(d, A.StructDecl) or not d.methods:
            continue
        for m in d.methods:
            this_t = A.NamedType(d.name, span=d.span)
            f = A.FnDecl(f"{d.name}_{m.name}",
                         [A.Param("this", this_t, span=m.span)] + m.params, m.ret, m.body,
                         exported=d.exported, span=m.span)
            if d.internal_name:
                f.internal_name = f"{d.internal_name}_{m.name}"
            fns.append(f)
            if origin is not None:
                origin[id(f)] = d
            entries.append(MethodEntry(A.NamedType(d.name, span=d.span), m.name, f.name))
        d.methods = []
    return fns, entries
