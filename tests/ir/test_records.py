"""`toolchain.records.dataclass` behaves as `dataclasses.dataclass` for the options the
compiler uses, the compiler's record classes are real dataclasses to the standard library,
and defining them does not import `dataclasses` (start-up time)."""
from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
from typing import Any, Optional

import pytest

from toolchain.compiler.frontend import ast as A
from toolchain import records
from toolchain.compiler.ir import types


def make(decorator, options: dict):
    """The same class body under `decorator(**options)`: a base with a kw-only field, a
    subclass with defaults, a factory and a non-compared, non-repr field."""
    @decorator(**options)
    class Base:
        span: str = dataclasses.field(kw_only=True)

    @decorator(**options)
    class Node(Base):
        name: str
        qualifier: Optional[str] = None
        items: list = dataclasses.field(default_factory=list)
        ty: Any = dataclasses.field(default=None, kw_only=True, compare=False, repr=False)

        def __post_init__(self):
            if not options.get("frozen"):
                self.seen = True
    return Node


OPTIONS = [{}, {"eq": False}, {"frozen": True}, {"repr": False}]


@pytest.mark.parametrize("options", OPTIONS)
def test_same_behaviour_as_the_standard_library(options):
    ours, std = make(records.dataclass, options), make(dataclasses.dataclass, options)
    assert str(inspect.signature(ours.__init__)) == str(inspect.signature(std.__init__))
    assert ours.__match_args__ == std.__match_args__
    a, b = ours("x", span="s"), std("x", span="s")
    if options.get("repr", True):
        assert repr(a).replace("make.<locals>.", "") == repr(b).replace("make.<locals>.", "")
    else:
        assert repr(a).startswith("<") and repr(b).startswith("<")
    assert [(f.name, f.default, f.kw_only, f.compare, f.repr) for f in dataclasses.fields(a)] \
        == [(f.name, f.default, f.kw_only, f.compare, f.repr) for f in dataclasses.fields(b)]
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert a.items is not ours("y", span="s").items          # the factory runs per instance
    for cls in (ours, std):
        x, y = cls("x", span="s", ty=1), cls("x", span="s", ty=2)
        assert (x == y) == (options.get("eq", True)), cls     # `ty` is not compared
        assert (cls.__hash__ is None) == (options.get("eq", True) and not options.get("frozen"))
        if options.get("frozen"):               # (hashing: see the PtrType test below)
            with pytest.raises(dataclasses.FrozenInstanceError):
                x.name = "z"
        else:
            assert dataclasses.replace(x, name="z").name == "z" and x.seen


def test_unsupported_options_fall_back_to_the_standard_library():
    @records.dataclass(order=True)
    class P:
        x: int
    assert P(1) < P(2)


def test_compiler_records_are_dataclasses():
    node = A.IntLit(3, span=None)
    assert dataclasses.is_dataclass(node)
    assert [f.name for f in dataclasses.fields(A.IntLit)] == ["span", "ty", "value"]
    ptr = types.PtrType(types.I32, "global")
    assert ptr == types.PtrType(types.I32, "global") and hash(ptr) == hash(
        types.PtrType(types.I32, "global"))
    with pytest.raises(ValueError):
        types.PtrType(types.I32, "nowhere")                  # __post_init__ still runs


def test_field_names_and_the_default_order_rule():
    assert records.field_names(A.IntLit) == ("span", "ty", "value")
    with pytest.raises(TypeError, match="non-default argument 'b' follows default"):
        @records.dataclass
        class Bad:
            a: int = 0
            b: int


def test_same_shaped_classes_keep_their_own_names_and_defaults():
    @records.dataclass(frozen=True)
    class P:
        x: int
        y: list = records.field(default_factory=list)

    @records.dataclass(frozen=True)
    class Q:
        u: str
        v: dict = records.field(default_factory=dict)
    assert P.__init__.__code__ is not Q.__init__.__code__
    assert (P(1), Q("a")) == (P(1, []), Q("a", {})) and repr(Q("a")).endswith("Q(u='a', v={})")
    with pytest.raises(dataclasses.FrozenInstanceError):
        Q("a").u = "b"


def test_defining_records_does_not_import_dataclasses():
    code = ("import sys\n"
            "from toolchain.compiler.frontend import ast\n"
            "from toolchain.compiler.ir import module, types\n"
            "print('dataclasses' in sys.modules, 'typing' in sys.modules)")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True, cwd=records.__file__.rsplit("/toolchain/", 1)[0])
    assert out.stdout.split() == ["False", "False"]
