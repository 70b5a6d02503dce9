"""The later tier's whole-program rewrites, run on the merged items before type checking
(the order of the reference pipeline): traits and impls are collected and checked, impl
functions lifted; generic functions and structs monomorphized (generics.py); struct
methods lifted (methods.py). The result is core-tier items plus the method table entries
that lower_later.py resolves calls with.

Every item the rewrites make (an impl function, an instance, a lifted method) belongs to
the module of the item it came from (`place_in_modules`): its body sees that module's
private names, as the source it was written in does.
"""
from __future__ import annotations

from . import ast as A
from .generics import Monomorphizer
from .methods import check_traits, lift_impls, lift_struct_methods
from .substitute import spell

_LATER = (A.TraitDecl, A.ImplDecl)


def expand_later_tier(items: list[A.Stmt], bag, homes: dict | None = None):
    """(items, method entries, origin): `origin` maps id(made item) -> the item it was made
    from; `homes` maps id(item) -> the index of the module it is written in (generic uses
    see their own module's private templates first). Programs without later-tier items
    pass through."""
    origin: dict[int, A.Stmt] = {}
    if not any(isinstance(d, _LATER) or getattr(d, "type_params", None) or
               getattr(d, "methods", None) for d in items):
        return items, [], origin
    traits = check_traits(items, bag)
    impl_fns, entries, _ = lift_impls(items, traits, bag, origin)
    homes = dict(homes or {})
    for f in impl_fns:
        if id(origin[id(f)]) in homes:
            homes[id(f)] = homes[id(origin[id(f)])]
    core = [d for d in items if not isinstance(d, _LATER)] + impl_fns
    mono = Monomorphizer(core, bag, set(), set(traits), origin, homes)
    for e in entries:
        mono.rewrite(e.for_type)
    for d in items:
        if isinstance(d, A.ImplDecl) and d.trait in traits:
            t = d.for_type
            mono.rewrite(t, homes.get(id(d)))
            mono.impls.add((d.trait, spell(t)))
    core = mono.run(core)
    method_fns, method_entries = lift_struct_methods(core, origin)
    return core + method_fns, entries + method_entries, origin


def place_in_modules(units: list[tuple], items: list[A.Stmt],
                     origin: dict[int, A.Stmt]) -> list[tuple]:
    """`units` ((path, items, hidden, aliases) per module) with each made item of `items`
    added to the module of the source item it came from (through instances of instances).
    An instance of a private template is private too (other modules cannot name it)."""
    home = {id(d): i for i, (_, unit, _, _) in enumerate(units) for d in unit}
    made: list[list[A.Stmt]] = [[] for _ in units]
    hidden = [dict(h) for _, _, h, _ in units]
    for d in items:
        src = d
        while id(src) not in home and id(src) in origin:
            src = origin[id(src)]
        if src is d or id(src) not in home:
            continue
        i = home[id(src)]
        made[i].append(d)
        if getattr(origin[id(d)], "type_params", None) and src.name in hidden[i]:
            hidden[i][d.name] = d.internal_name
    return [(path, list(unit) + extra, h, aliases)
            for (path, unit, _, aliases), extra, h in zip(units, made, hidden)]
