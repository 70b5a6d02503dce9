"""Monomorphization of generic functions, structs and tagged enums (the later tier).

Runs on the merged item list before type checking (checker.py, via later.py). Every
`Name<T, ...>` type and every `f<T, ...>(...)` call reachable from non-generic code is
rewritten to a concrete copy, made once per distinct argument list and named
deterministically: the base name, then `__` and each argument's spelling with `*` -> `_ptr`
and other punctuation -> `_` (`Pair<int32,float64>` -> `Pair__int32__float64`,
`id<int8*>` -> `id__int8_ptr`). Copies are made transitively (generic code using generic
code, recursion), deduplicated program-wide (all modules share one table), and their type
parameters are substituted everywhere a type can be spelled (parameter/return/local/cast/
`new`/`sizeof`/function-pointer types, struct fields, method bodies). Templates are never
type-checked or emitted: a template that is never instantiated is never checked.

A private template (one its module does not export) is its module's own: a use resolves to
the private template of the module it is written in, else to the public one, so two modules
may each keep a private `twice<T>` or `Box<T>`. Their instances share the visible name
(`twice__int32`) but not the link name (`internal_name`), like any private names.

Type arguments are always explicit (`swap_in<int64>(&a, &b)`); there is no inference.
Each argument must implement every trait bound of its parameter (an `impl` for exactly that
type spelling), else E0018.
"""
from __future__ import annotations

from . import ast as A
from .substitute import _fields, clone, mangle_part, spell
from .typesys import INSTANCE_SPELLING

MAX_INSTANCES = 2000        # a runaway recursion (f<T> using f<T*>) stops here, E0018
MAX_TYPE_DEPTH = 40         # ... and so does a type argument nested this deeply


def _depth(t) -> int:
    if isinstance(t, (A.PointerType, A.ArrayType)):
        return 1 + _depth(t.elem)
    if isinstance(t, A.NamedType) and t.args:
        return 1 + max(_depth(a) for a in t.args)
    if isinstance(t, A.FnPtrType):
        return 1 + max([_depth(p) for p in t.params] + [_depth(t.ret)])
    return 0


class Monomorphizer:
    def __init__(self, items: list[A.Stmt], bag, impls: set[tuple[str, str]],
                 traits: set[str], origin: dict | None = None, homes: dict | None = None):
        self.bag = bag
        self.origin = {} if origin is None else origin     # id(instance) -> its template
        self.homes = {} if homes is None else homes         # id(item) -> its module's index
        self.impls = impls              # (trait, spelling of the for-type)
        self.traits = traits
        # (home module, name) for a private template, (None, name) for a public one
        self.fn_tpl = self._templates(items, (A.FnDecl,))
        self.struct_tpl = self._templates(items, (A.StructDecl, A.EnumDecl))
        self.instances: dict[tuple[str, str], A.Stmt] = {}   # (name, link name) -> instance
        self.work: list[tuple[A.Stmt, object]] = []          # (instance, its home)
        self._check_bound_names()

    def _templates(self, items, kinds) -> dict:
        return {(self.homes.get(id(d)) if d.internal_name else None, d.name): d
                for d in items if isinstance(d, kinds) and d.type_params}

    @staticmethod
    def _lookup(table: dict, name: str, home):
        """The template `name` as seen from module `home`: its own private one, else the
        public one, else (a use outside any module's items: an impl's method table) the
        only template of that name."""
        tpl = table.get((home, name)) or table.get((None, name))
        if tpl is None:
            tpl = next((t for (_, n), t in table.items() if n == name), None)
        return tpl

    def _check_bound_names(self) -> None:
        for tpl in list(self.fn_tpl.values()) + list(self.struct_tpl.values()):
            for p in tpl.type_params:
                for b in p.bounds:
                    if b not in self.traits:
                        self.bag.error("E0018", f"unknown trait `{b}` in the bound of "
                                       f"`{p.name}` on `{tpl.name}`", p.span)

    def run(self, items: list[A.Stmt]) -> list[A.Stmt]:
        out = [d for d in items if not getattr(d, "type_params", None)]
        for d in out:
            self.rewrite(d, self.homes.get(id(d)))
        while self.work:
            self.rewrite(*self.work.pop())
        return out + [self.instances[k] for k in sorted(self.instances)]

    # ---------------------------------------------------------------- rewriting
    def rewrite(self, node, home=None) -> None:
        """Replace generic uses below `node` (in place) by their instances' names; `home`
        is the module `node` is written in (its private templates come first)."""
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, A.NamedType) and n.args:
                for a in n.args:
                    self.rewrite(a, home)
                n.name = self.instance(self.struct_tpl, n.name, n.args, n.span, "type", home)
                n.args = []
                continue
            if isinstance(n, A.Call) and n.type_args and isinstance(n.callee, A.Name):
                for a in n.type_args:
                    self.rewrite(a, home)
                errors = self.bag.error_count
                n.callee.name = self.instance(self.fn_tpl, n.callee.name, n.type_args,
                                              n.span, "function", home)
                n.type_args = []
                n.refused = self.bag.error_count > errors
            if isinstance(n, A.Node):
                for name in _fields(type(n)):
                    v = getattr(n, name)
                    if isinstance(v, (A.Node, list, tuple)):
                        stack.append(v)
            elif isinstance(n, (list, tuple)):
                stack.extend(x for x in n if isinstance(x, (A.Node, list, tuple)))

    def instance(self, table: dict, name: str, args: list[A.TypeExpr], span,
                 what: str, home=None) -> str:
        tpl = self._lookup(table, name, home)
        if tpl is None:
            self.bag.error("E0018", f"`{name}` is not a generic {what}, so it takes no "
                           "type arguments", span)
            return name
        if len(args) != len(tpl.type_params):
            self.bag.error("E0018", f"generic `{name}` expects {len(tpl.type_params)} type "
                           f"argument(s) but got {len(args)}", span)
            return name
        mangled = name + "".join("__" + mangle_part(a) for a in args)
        INSTANCE_SPELLING.setdefault(
            mangled, f"{name}<{', '.join(spell(a, shown=True) for a in args)}>")
        key = (mangled, tpl.internal_name or "")
        if key in self.instances:
            return mangled
        for p, a in zip(tpl.type_params, args):
            for b in p.bounds:
                if b in self.traits and (b, spell(a)) not in self.impls:
                    self.bag.error("E0018", f"type `{spell(a)}` does not implement trait "
                                   f"`{b}` required by `{name}`", span)
        if len(self.instances) >= MAX_INSTANCES or \
                max(_depth(a) for a in args) > MAX_TYPE_DEPTH:
            self.bag.error("E0018", f"generic instantiation of `{name}` does not end (type "
                           f"arguments nested over {MAX_TYPE_DEPTH} deep, or over "
                           f"{MAX_INSTANCES} instances): does it instantiate itself with ever "
                           "larger types?", span)
            return name
        inst = clone(tpl, {p.name: a for p, a in zip(tpl.type_params, args)})
        inst.name, inst.type_params = mangled, []
        if tpl.internal_name:
            inst.internal_name = tpl.internal_name + mangled[len(name):]
        self.instances[key] = inst
        self.origin[id(inst)] = tpl
        tpl_home = self.homes.get(id(tpl))
        self.homes[id(inst)] = tpl_home
        self.work.append((inst, tpl_home))
        return mangled
