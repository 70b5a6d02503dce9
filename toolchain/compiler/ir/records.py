"""`dataclass` and `field` for the compiler's many small record classes, at a fraction of the
start-up cost of the standard library's.

Why: every `mettle` process defines ~80 record classes (AST nodes, IR types); the standard
`dataclasses.dataclass` compiles three generated methods per class and computes a signature
for the docstring, which was half of the compiler's import time. This decorator makes the
same classes with one small `exec` per class (`__init__`); `__repr__`, `__eq__` and
`__hash__` are shared functions driven by the class's field tuples.

Contract: a drop-in for the subset the compiler uses (`init`, `repr`, `eq`, `frozen`;
`field(default=, default_factory=, kw_only=, repr=, compare=)`; `__post_init__`). The
classes are real dataclasses to the standard library: `__dataclass_fields__` holds real
`dataclasses.Field` objects, so `dataclasses.fields/replace/asdict/is_dataclass` work. Any
other option (order, slots, unsafe_hash, InitVar/ClassVar/KW_ONLY annotations, ...) falls
back to `dataclasses.dataclass` itself. tests/ir/test_records.py checks the equivalence.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import MISSING, Field, FrozenInstanceError, field
from types import SimpleNamespace

__all__ = ["dataclass", "field"]

_SUPPORTED = {"init", "repr", "eq", "frozen"}
# Before 3.10 fields have no kw_only: the Pants plugin (CPython 3.9) resolving a PTX target
# imports a few compiler modules, and gets the standard decorator there.
_OLD_PYTHON = sys.version_info < (3, 10)


class _Factory:
    """The default of a field with a default_factory (`<factory>` in signatures)."""
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
_SPECIAL_TYPES = ("ClassVar", "InitVar", "KW_ONLY")


def dataclass(cls=None, /, **options):
    """`@dataclass`, `@dataclass(eq=False)`, `@dataclass(frozen=True)`."""
    def wrap(c):
        if set(options) - _SUPPORTED or not options.get("init", True) or _OLD_PYTHON or \
                _needs_stdlib(c):
            return dataclasses.dataclass(c, **options)
        return _process(c, repr_=options.get("repr", True), eq=options.get("eq", True),
                        frozen=options.get("frozen", False))
    return wrap if cls is None else wrap(cls)


def _needs_stdlib(cls) -> bool:
    notes = cls.__dict__.get("__annotations__", {})
    return any(isinstance(t, str) and t.split("[")[0].split(".")[-1] in _SPECIAL_TYPES
               or not isinstance(t, str) for t in notes.values())


def _own_fields(cls) -> list[Field]:
    out = []
    for name, type_ in cls.__dict__.get("__annotations__", {}).items():
        default = cls.__dict__.get(name, MISSING)
        f = default if isinstance(default, Field) else field(default=default)
        f.name, f.type = name, type_
        f._field_type = dataclasses._FIELD   # what dataclasses.fields() filters on
        if f.kw_only is MISSING:
            f.kw_only = False
        if isinstance(default, Field):
            if f.default is MISSING:
                delattr(cls, name)           # as the standard library does
            else:
                setattr(cls, name, f.default)
        out.append(f)
    return out


def _process(cls, repr_: bool, eq: bool, frozen: bool):
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, "__dataclass_fields__", {}))
    for f in _own_fields(cls):
        fields[f.name] = f
    all_fields = tuple(fields.values())
    cls.__dataclass_fields__ = fields
    # Read by dataclasses when a standard dataclass subclasses this one (`.frozen`).
    cls.__dataclass_params__ = SimpleNamespace(init=True, repr=repr_, eq=eq, order=False,
                                               unsafe_hash=False, frozen=frozen)
    cls.__match_args__ = tuple(f.name for f in all_fields if not f.kw_only)
    cls.__init__ = _make_init(cls, all_fields, frozen)
    cls._record_repr = tuple(f.name for f in all_fields if f.repr)
    cls._record_compare = tuple(f.name for f in all_fields if f.compare)
    if repr_ and "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr
    explicit_hash = cls.__dict__.get("__hash__", MISSING) not in (MISSING, None)
    if eq and "__eq__" not in cls.__dict__:
        cls.__eq__ = _eq
    if eq and not explicit_hash:
        cls.__hash__ = _hash if frozen else None   # as dataclasses: eq alone is unhashable
    if frozen:
        _freeze(cls, fields)
    return cls


def _make_init(cls, fields: tuple[Field, ...], frozen: bool):
    """The generated `__init__`: positional fields in order, then keyword-only ones."""
    env = {"FACTORY": _FACTORY, "_setattr": object.__setattr__}
    params, kw_params, body = [], [], []
    for i, f in enumerate(fields):
        if f.default is not MISSING:
            env[f"_d{i}"] = f.default
            param = f"{f.name}=_d{i}"
        elif f.default_factory is not MISSING:
            env[f"_f{i}"] = f.default_factory
            param = f"{f.name}=FACTORY"
            body.append(f"  if {f.name} is FACTORY: {f.name} = _f{i}()")
        else:
            param = f.name
        (kw_params if f.kw_only else params).append(param)
        body.append(f"  _setattr(self, {f.name!r}, {f.name})" if frozen
                    else f"  self.{f.name} = {f.name}")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    signature = ", ".join(["self", *params, *(["*", *kw_params] if kw_params else [])])
    src = f"def __init__({signature}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(src, env)                           # noqa: S102 - our own generated source
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return init


def _repr(self) -> str:
    inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._record_repr)
    return f"{type(self).__qualname__}({inner})"


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = self._record_compare
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self) -> int:
    return hash(tuple(getattr(self, n) for n in self._record_compare))


def _freeze(cls, fields: dict) -> None:
    """Frozen instances refuse assignment, except to non-fields of subclasses (as in
    dataclasses)."""
    def __setattr__(self, name, value):
        if type(self) is cls or name in fields:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in fields:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
