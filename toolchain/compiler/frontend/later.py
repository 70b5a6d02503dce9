"""The later tier's whole-program rewrites, run on the merged items before type checking
(the order of the reference pipeline): traits and impls are collected and checked, impl
functions lifted; generic functions and structs monomorphized (generics.py); struct
methods lifted (methods.py). The result is core-tier items plus the method table entries
that lower_later.py resolves calls with.
"""
from __future__ import annotations

from . import ast as A
from .generics import Monomorphizer
from .methods import check_traits, lift_impls, lift_struct_methods
from .substitute import spell

_LATER = (A.TraitDecl, A.ImplDecl)


def expand_later_tier(items: list[A.Stmt], bag):
    """(items, method entries). Programs without later-tier items pass through."""
    if not any(isinstance(d, _LATER) or getattr(d, "type_params", None) or
               getattr(d, "methods", None) for d in items):
        return items, []
    traits = check_traits(items, bag)
    impl_fns, entries, _ = lift_impls(items, traits, bag)
    core = [d for d in items if not isinstance(d, _LATER)] + impl_fns
    mono = Monomorphizer(core, bag, set(), set(traits))
    for e in entries:
        mono.rewrite(e.for_type)
    for d in items:
        if isinstance(d, A.ImplDecl) and d.trait in traits:
            t = d.for_type
            mono.rewrite(t)
            mono.impls.add((d.trait, spell(t)))
    core = mono.run(core)
    method_fns, method_entries = lift_struct_methods(core)
    return core + method_fns, entries + method_entries

