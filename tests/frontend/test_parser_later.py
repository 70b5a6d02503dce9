"""Parsing of the later tier: generics (and `<` disambiguation), traits, impls, methods,
tagged enums, match, defer, lambdas, new, import_str, static_assert."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend import ast as A
from toolchain.compiler.frontend.parser import parse_source


def body(src: str) -> list[A.Stmt]:
    return parse_source("fn f() {\n" + src + "\n}", "t").items[0].body.stmts


def expr(src: str) -> A.Expr:
    return body("x = " + src)[0].value


def first_error(src: str):
    with pytest.raises(CompileError) as ei:
        parse_source(src, "t")
    d = ei.value.diagnostics[0]
    return d.code, d.span.line, d.span.col, d.message


def test_generic_call_versus_less_than():
    c = expr("id<int32>(5)")
    assert isinstance(c, A.Call) and c.callee.name == "id" and \
        [t.name for t in c.type_args] == ["int32"]
    lt = expr("a < b")
    assert isinstance(lt, A.Binary) and lt.op == "<"
    both = expr("a < b && c > (d)")     # `<` ... `>` then `&&`: never type arguments
    assert isinstance(both, A.Binary) and both.op == "&&"
    assert isinstance(expr("a < b > (d)"), A.Call)      # the spec's rule: types, `>`, `(`


def test_nested_type_arguments_split_shift_tokens():
    d = body("var p: Pair<Box<int8>, Box<Box<int64>>> = { };")[0]
    outer = d.type
    assert outer.name == "Pair" and outer.args[1].args[0].args[0].name == "int64"
    c = expr("f<Box<int32>>(1) >> 2")
    assert isinstance(c, A.Binary) and c.op == ">>" and isinstance(c.left, A.Call)


@pytest.mark.parametrize("spelling, outer, inner", [
    ("Box<Box<int64>>*", A.PointerType, A.NamedType),        # a pointer to the outer type
    ("Box<Box<int64>>[2]", A.ArrayType, A.NamedType),
    ("Box<Box<int64>*>", A.NamedType, A.PointerType),        # the argument is a pointer
    ("Box<Box<Box<int8>>>*", A.PointerType, A.NamedType)])
def test_a_modifier_after_a_split_shift_belongs_to_the_outer_type(spelling, outer, inner):
    # `>>` closes two lists: the `*` after it once went to the inner type argument
    t = body(f"var p: {spelling};")[0].type
    assert isinstance(t, outer)
    box = t if outer is A.NamedType else t.elem
    assert box.name == "Box" and isinstance(box.args[0], inner)


def test_declarations():
    m = parse_source(
        "trait Shape { fn area(self: Self) -> float64; }\ntrait Marker;\n"
        "impl Shape for Sq { fn area(self: Self) -> float64 { return 1.0; } }\n"
        "impl Marker for int32*;\n"
        "struct Sq<T> where T: Marker { side: T; method get() -> T { return this.side; } }\n"
        "fn big<T: Shape + Marker, U>(x: T) -> T where U: Marker { return x; }\n"
        "enum Maybe<T> { Just(T), Nothing }\n", "t")
    trait, marker, impl, impl2, st, fn, en = m.items
    assert [x.name for x in trait.methods] == ["area"] and marker.methods == []
    assert impl.trait == "Shape" and impl.methods[0].body is not None
    assert isinstance(impl2.for_type, A.PointerType)
    assert st.type_params[0].bounds == ["Marker"] and st.methods[0].name == "get"
    assert [(p.name, p.bounds) for p in fn.type_params] == [("T", ["Shape", "Marker"]),
                                                             ("U", ["Marker"])]
    assert en.tagged and en.variants[0].payload.name == "T"


def test_statements_and_expressions():
    m, d, e, s = body("match (t) { case A(x): { } default: { } }\n"
                      "defer { close(1); }\nerrdefer undo()\nstatic_assert(1)")
    assert isinstance(m, A.Match) and [a.variant for a in m.arms] == ["A", None]
    assert isinstance(d, A.Defer) and not d.is_err and isinstance(d.stmt, A.Block)
    assert isinstance(e, A.Defer) and e.is_err
    assert isinstance(s, A.StaticAssert)
    me = expr("match (t) { case A(v): v, case B: 0\n default: 1 } * 2")
    assert isinstance(me, A.Binary) and isinstance(me.left, A.MatchExpr)
    assert len(me.left.arms) == 3
    lam = expr("fn(x: int32) -> int32 { return x; }")
    assert isinstance(lam, A.Lambda) and lam.params[0].name == "x"
    assert isinstance(expr("new Pair<int32, int8>"), A.New)
    assert isinstance(expr('import_str "a.txt"'), A.ImportStr)
    assert isinstance(expr("this.x"), A.Member)


@pytest.mark.parametrize("src,want", [
    ("trait T { fn m() -> int32 { } }", ("E0002", 1, 27, "must not have a body")),
    ("trait T { var x: int32; }", ("E0002", 1, 11, "function signature")),
    ("impl T int32 { }", ("E0002", 1, 8, "expected 'for'")),
    ("impl T for int32 { fn m() -> int32; }", ("E0002", 1, 23, "must have a body")),
    ("export impl T for int32;", ("E0002", 1, 8, "cannot be exported")),
    ("struct S { method m() -> int32; }", ("E0002", 1, 31, "method body")),
    ("struct S { fn m() { } }", ("E0002", 1, 12, "method name(...)")),
    ("fn f<T>(x: T) where U: A { }", ("E0018", 1, 21, "unknown type parameter 'U'")),
    ("fn f() { match t { } }", ("E0002", 1, 16, "'(' after 'match'")),
    ("fn f() { match (t) { case A: return 1; } }", ("E0002", 1, 30, "a match arm's body")),
    ("fn f() { match (t) { case T.A: { } } }", ("E0002", 1, 28, "':'")),
    ("fn f() { defer; }", ("E0002", 1, 15, "after 'defer'")),
    ("fn f() { defer x + 1; }", ("E0010", 1, 16, "deferred statement must be")),
    ("defer close();", ("E0010", 1, 1, "outside of a function")),
    ("fn f() { x = fn(a: int32) -> int32 return a; }", ("E0002", 1, 36, "lambda body")),
])
def test_later_tier_syntax_errors(src, want):
    code, line, col, msg = first_error(src)
    assert (code, line, col) == want[:3] and want[3] in msg, (code, line, col, msg)


def test_parenthesized_function_types_take_the_modifiers():
    arr = body("var t: (Fn(int32) -> int32)[3];")[0].type
    assert isinstance(arr, A.ArrayType) and arr.size == 3
    assert isinstance(arr.elem, A.FnPtrType) and arr.elem.is_closure
    p = body("var p: (fn(int32) -> int32)*;")[0].type
    assert isinstance(p, A.PointerType) and isinstance(p.elem, A.FnPtrType)
    ret = body("var r: Fn(int32) -> int32[3];")[0].type      # without: the result's array
    assert isinstance(ret, A.FnPtrType) and isinstance(ret.ret, A.ArrayType)
    from toolchain.compiler.frontend.substitute import spell
    assert spell(arr, shown=True) == "(Fn(int32) -> int32)[3]"
    assert spell(p) == "(fn(int32)->int32)*"
    # a call's type arguments are tried without them: still two comparisons
    assert isinstance(expr("a < (b) > (c)"), A.Binary)
    assert first_error("fn f() { var t: (int32; }") == \
        ("E0002", 1, 23, "expected ')' closing the parenthesized type, found ';'")
