"""`dataclass` and `field` for the toolchain's many small record classes, at a fraction of the
start-up cost of the standard library's.

Why: every `mettle` process defines ~90 record classes (AST nodes, IR types, diagnostics);
the standard `dataclasses.dataclass` compiles three generated methods per class and computes
a signature for the docstring, and importing `dataclasses` (it imports `inspect`) cost ~10
ms of each ~100 ms compile on its own. This decorator makes the same classes with one small
`exec` per class (`__init__`); `__repr__`, `__eq__` and `__hash__` are shared functions
driven by the class's field tuples; and it never imports `dataclasses` itself.

Contract: a drop-in for the subset the toolchain uses (`init`, `repr`, `eq`, `frozen`;
`field(default=, default_factory=, kw_only=, repr=, compare=)`; `__post_init__`). The
classes are real dataclasses to the standard library: reading `__dataclass_fields__` (as
`dataclasses.fields/replace/asdict/is_dataclass` do) builds real `dataclasses.Field`
objects on first use, so code that never asks pays nothing. Any other option (order, slots,
unsafe_hash, InitVar/ClassVar/KW_ONLY annotations, ...) falls back to
`dataclasses.dataclass` itself. tests/ir/test_records.py checks the equivalence.
It sits outside the layers (toolchain/, not toolchain/compiler/) so that every layer,
diagnostics included, may use it.
"""
from __future__ import annotations

import sys
from types import FunctionType, SimpleNamespace

__all__ = ["dataclass", "field"]

_SUPPORTED = {"init", "repr", "eq", "frozen"}
# Before 3.10 fields have no kw_only: the Pants plugin (CPython 3.9) resolving a PTX target
# imports a few compiler modules, and gets the standard decorator there.
_OLD_PYTHON = sys.version_info < (3, 10)
_SPECIAL_TYPES = ("ClassVar", "InitVar", "KW_ONLY")


class _Missing:
    """No default (dataclasses.MISSING once fields are made real)."""
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


class _Factory:
    """The default of a field with a default_factory (`<factory>` in signatures)."""
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


class _Field:
    """What `field()` returns, and one field of a record class: the attributes of
    `dataclasses.Field` that the decorator reads, without importing `dataclasses`."""
    __slots__ = ("name", "type", "default", "default_factory", "init", "repr", "hash",
                 "compare", "metadata", "kw_only")

    def __init__(self, default=MISSING, default_factory=MISSING, init=True, repr=True,
                 hash=None, compare=True, metadata=None, kw_only=MISSING):
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = self.type = None
        self.default, self.default_factory, self.init, self.repr = \
            default, default_factory, init, repr
        self.hash, self.compare, self.metadata, self.kw_only = hash, compare, metadata, kw_only


def field(*, default=MISSING, default_factory=MISSING, init=True, repr=True, hash=None,
          compare=True, metadata=None, kw_only=MISSING):
    """`dataclasses.field` for record classes (and, converted, for the fallback)."""
    return _Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)


def dataclass(cls=None, /, **options):
    """`@dataclass`, `@dataclass(eq=False)`, `@dataclass(frozen=True)`."""
    def wrap(c):
        if set(options) - _SUPPORTED or not options.get("init", True) or _OLD_PYTHON or \
                _needs_stdlib(c):
            return _std_dataclass(c, options)
        return _process(c, repr_=options.get("repr", True), eq=options.get("eq", True),
                        frozen=options.get("frozen", False))
    return wrap if cls is None else wrap(cls)


def _needs_stdlib(cls) -> bool:
    notes = cls.__dict__.get("__annotations__", {})
    return any(isinstance(t, str) and t.split("[")[0].split(".")[-1] in _SPECIAL_TYPES
               or not isinstance(t, str) for t in notes.values())


def _std_dataclass(cls, options: dict):
    """The standard decorator, with our `field()`s turned into its own."""
    import dataclasses
    for name in cls.__dict__.get("__annotations__", {}):
        f = cls.__dict__.get(name)
        if isinstance(f, _Field):
            setattr(cls, name, _real_field(f, dataclasses, named=False))
    return dataclasses.dataclass(cls, **options)


def _as_field(value, dc) -> _Field:
    """One of ours for a `dataclasses.Field` (tests use the standard `field()` with this
    decorator; `dc` is the dataclasses module, loaded since `value` is its Field)."""
    if type(value) is _Field:
        return value

    def own(v):
        return MISSING if v is dc.MISSING else v
    return _Field(own(value.default), own(value.default_factory), value.init, value.repr,
                  value.hash, value.compare, value.metadata, own(value.kw_only))


def _own_fields(cls, dc) -> list[_Field]:
    """The fields `cls` declares; `dc` is the dataclasses module if something loaded it."""
    out = []
    attrs = cls.__dict__
    for name, type_ in attrs.get("__annotations__", {}).items():
        default = attrs.get(name, MISSING)
        if type(default) is _Field or dc is not None and isinstance(default, dc.Field):
            f = _as_field(default, dc)
            if f.default is MISSING:
                delattr(cls, name)           # as the standard library does
            else:
                setattr(cls, name, f.default)
        else:
            f = _Field(default)
        f.name, f.type = name, type_
        if f.kw_only is MISSING:
            f.kw_only = False
        out.append(f)
    return out


def _base_fields(base, dc) -> dict:
    """The fields a base class contributes: a record's own, or a standard dataclass's."""
    own = base.__dict__.get("_record_fields")
    if own is not None:
        return own
    real = base.__dict__.get("__dataclass_fields__")
    if real is None:
        return {}
    out = {}
    for name, f in real.items():
        g = _as_field(f, dc)
        g.name, g.type = f.name, f.type
        out[name] = g
    return out


_PARAMS: dict = {}   # (repr, eq, frozen) -> the shared __dataclass_params__


def _process(cls, repr_: bool, eq: bool, frozen: bool):
    dc = sys.modules.get("dataclasses")
    fields: dict[str, _Field] = {}
    for base in cls.__mro__[-2:0:-1]:       # bases, furthest first, without `object`
        fields.update(_base_fields(base, dc))
    for f in _own_fields(cls, dc):
        fields[f.name] = f
    all_fields = tuple(fields.values())
    cls._record_fields = fields
    cls.__dataclass_fields__ = _RealFields(cls)
    # Read by dataclasses when a standard dataclass subclasses this one (`.frozen`).
    params = _PARAMS.get((repr_, eq, frozen))
    if params is None:
        params = _PARAMS[repr_, eq, frozen] = SimpleNamespace(
            init=True, repr=repr_, eq=eq, order=False, unsafe_hash=False, frozen=frozen)
    cls.__dataclass_params__ = params
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


def field_names(cls) -> tuple[str, ...]:
    """The field names of a record class (or a standard dataclass), in order, without
    making the real `dataclasses.Field` objects."""
    own = getattr(cls, "_record_fields", None)
    if own is not None and "_record_fields" in cls.__dict__:
        return tuple(own)
    import dataclasses
    return tuple(f.name for f in dataclasses.fields(cls))


class _RealFields:
    """`cls.__dataclass_fields__`: on first read, real `dataclasses.Field` objects replace
    this descriptor (only code that imported `dataclasses` reads it)."""

    def __init__(self, cls) -> None:
        self.cls = cls

    def __get__(self, obj, owner=None) -> dict:
        import dataclasses
        real = {name: _real_field(f, dataclasses)
                for name, f in self.cls._record_fields.items()}
        setattr(self.cls, "__dataclass_fields__", real)
        return real


def _real_field(f: _Field, dc, named: bool = True):
    """The `dataclasses.Field` equal to one of ours."""
    def std(v):
        return dc.MISSING if v is MISSING else v
    kw_only = {} if f.kw_only is MISSING else {"kw_only": f.kw_only}   # (none before 3.10)
    real = dc.field(default=std(f.default), default_factory=std(f.default_factory),
                    init=f.init, repr=f.repr, hash=f.hash, compare=f.compare,
                    metadata=f.metadata, **kw_only)
    if named:
        real.name, real.type = f.name, f.type
        real._field_type = dc._FIELD         # what dataclasses.fields() filters on
    return real


_INIT_CODE: dict = {}    # shape -> (code with placeholder names, where the names go)


def _make_init(cls, fields: tuple[_Field, ...], frozen: bool):
    """The generated `__init__`: positional fields in order, then keyword-only ones.
    Compiling one small function per class was a fifth of the compiler's import time, so
    the code is compiled once per shape (which fields have a factory, which are keyword-
    only, frozen, `__post_init__`) with placeholder names and renamed for each class."""
    env = {"FACTORY": _FACTORY, "_setattr": object.__setattr__}
    shape, names, defaults, kw_defaults = [], [], [], {}
    seen_default = None
    for i, f in enumerate(fields):
        names.append(f.name)
        factory = f.default is MISSING and f.default_factory is not MISSING
        shape.append((factory, f.kw_only))
        if f.default is MISSING and not factory:
            if seen_default is not None and not f.kw_only:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            continue
        if factory:
            env[f"_f{i}"] = f.default_factory
        value = _FACTORY if factory else f.default
        if f.kw_only:
            kw_defaults[f.name] = value
        else:
            seen_default = f
            defaults.append(value)
    key = (tuple(shape), frozen, hasattr(cls, "__post_init__"))
    template = _INIT_CODE.get(key)
    if template is None:
        template = _INIT_CODE[key] = _init_code(*key)
    code, var_slots, name_slots, const_slots = template
    code = code.replace(co_varnames=_renamed(code.co_varnames, var_slots, names),
                        co_names=_renamed(code.co_names, name_slots, names),
                        co_consts=_renamed(code.co_consts, const_slots, names))
    init = FunctionType(code, env, "__init__", tuple(defaults) or None)
    init.__kwdefaults__ = kw_defaults or None
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return init


def _renamed(items: tuple, slots: tuple, names: list) -> tuple:
    if not slots:
        return items
    out = list(items)
    for at, k in slots:
        out[at] = names[k]
    return tuple(out)


_PLACEHOLDER = "_record_field_%d_"


def _init_code(kinds: tuple, frozen: bool, post_init: bool):
    """The code of `__init__` for one shape, field i named `_PLACEHOLDER % i`, and for its
    co_varnames, co_names and co_consts the (position, field index) of each placeholder."""
    params, kw_params, body = [], [], []
    for i, (factory, kw_only) in enumerate(kinds):
        name = _PLACEHOLDER % i
        if factory:
            body.append(f"  if {name} is FACTORY: {name} = _f{i}()")
        (kw_params if kw_only else params).append(name)
        body.append(f"  _setattr(self, {name!r}, {name})" if frozen
                    else f"  self.{name} = {name}")
    if post_init:
        body.append("  self.__post_init__()")
    signature = ", ".join(["self", *params, *(["*", *kw_params] if kw_params else [])])
    src = f"def __init__({signature}):\n" + ("\n".join(body) or "  pass") + "\n"
    env: dict = {}
    exec(src, env)                           # noqa: S102 - our own generated source
    code = env["__init__"].__code__
    index = {_PLACEHOLDER % i: i for i in range(len(kinds))}

    def slots(items):
        return tuple((at, index[x]) for at, x in enumerate(items)
                     if type(x) is str and x in index)
    return code, slots(code.co_varnames), slots(code.co_names), slots(code.co_consts)


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


def _frozen_error(message: str) -> Exception:
    from dataclasses import FrozenInstanceError
    return FrozenInstanceError(message)


def _freeze(cls, fields: dict) -> None:
    """Frozen instances refuse assignment, except to non-fields of subclasses (as in
    dataclasses)."""
    def __setattr__(self, name, value):
        if type(self) is cls or name in fields:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in fields:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
