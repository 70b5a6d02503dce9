"""Later-tier diagnostics: each misuse gives its code at the right line:col (first error)."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir


def first(src: str, gpu: bool = False):
    with pytest.raises(CompileError) as ei:
        compile_to_ir("t.mettle", gpu=gpu, source_text=src)
    d = ei.value.diagnostics[0]
    return d.code, d.span.line, d.span.col, d.message


def ok(src: str, gpu: bool = False):
    return compile_to_ir("t.mettle", gpu=gpu, source_text=src)[0]


MAIN = "\nfn main() -> int32 { return 0; }\n"

NEG = [
    # static_assert
    ("struct H { a: int64; }\nstatic_assert(sizeof(H) == 4);" + MAIN,
     ("E0017", 2, 15, "static_assert failed")),
    ("var g: int32 = 1;\nstatic_assert(g == 1);" + MAIN,
     ("E0017", 2, 15, "must be a compile-time integer")),
    ("static_assert(1, 2);" + MAIN, ("E0017", 1, 1, "exactly one condition")),
    ("fn main() -> int32 {\n  static_assert((3 & 1) == 0);\n  return 0;\n}",
     ("E0017", 2, 17, "static_assert failed")),
    # qualified enum values
    ("enum C { R, G }\nfn main() -> int32 {\n  return C.B;\n}",
     ("E0101", 3, 10, "enum `C` has no variant `B`")),
    # pointer truthiness: only `!p`
    ("fn main() -> int32 {\n  var p: int32* = 0;\n  if (p) { return 1; }\n  return 0;\n}",
     ("E0016", 3, 7, "a pointer is not a condition")),
    # traits, impls, methods, generics, new
    ('trait T { fn m(self: Self) -> int32; }\ntrait T;',
     ('E0019', 2, 7, 'duplicate trait declaration `T`')),
    ('impl Nope for int32 { fn m(self: Self) -> int32 { return 1; } }',
     ('E0019', 1, 6, 'unknown trait `Nope` in impl declaration')),
    ('trait T { fn m(self: Self) -> int32; }\nimpl T for int32 { fn m(self: Self) -> int32 { return 1; } }\nimpl T for int32 { fn m(self: Self) -> int32 { return 2; } }',
     ('E0019', 3, 1, 'duplicate impl `T for int32`')),
    ('trait T { fn m(self: Self) -> int32; fn k(self: Self) -> int32; }\nimpl T for int32 {\n  fn m(self: Self) -> int32 { return 1; }\n}',
     ('E0019', 2, 1, 'impl `T for int32` is missing trait meth')),
    ('trait T { fn m(self: Self, a: int32) -> int32; }\nimpl T for int32 {\n  fn m(self: Self) -> int32 { return 1; }\n}',
     ('E0019', 3, 6, 'impl method `m` has a signature that doe')),
    ('trait T { fn m(self: Self, a: int32) -> int32; }\nimpl T for int32 {\n  fn m(self: Self, a: int64) -> int32 { return 1; }\n}',
     ('E0019', 3, 20, 'impl method `m` parameter 2 does not mat')),
    ('trait T { fn m(self: Self) -> int32; }\nimpl T for int32 {\n  fn m(self: int32) -> int64 { return 1; }\n}',
     ('E0019', 3, 6, 'impl method `m` return type does not mat')),
    ('struct S { a: int32; }\nfn main() -> int32 {\n  var s: S = { a: 1 };\n  return s.nope();\n}',
     ('E0205', 4, 10, 'S has no field `nope`')),
    ('struct S { a: int32; method get() -> int32 { return this.a; } }\nfn main() -> int32 {\n  var x: int32 = 3;\n  return x.get();\n}',
     ('E0019', 4, 10, 'no method `get` for int32')),
    ('struct P<A, B> { a: A; b: B; }\nfn main() -> int32 {\n  var p: P<int32> = { a: 1 };\n  return 0;\n}',
     ('E0018', 3, 10, 'generic `P` expects 2 type argument(s) b')),
    ('fn id<T>(x: T) -> T { return x; }\nfn main() -> int32 {\n  return id<int32, int8>(1);\n}',
     ('E0018', 3, 10, 'generic `id` expects 1 type argument(s) ')),
    ('trait Ord;\nfn id<T: Ord>(x: T) -> T { return x; }\nfn main() -> int32 {\n  return id<int32>(1);\n}',
     ('E0018', 4, 10, 'type `int32` does not implement trait `O')),
    ('fn id<T: Nope>(x: T) -> T { return x; }\nfn main() -> int32 {\n  return id<int32>(1);\n}',
     ('E0018', 1, 7, 'unknown trait `Nope` in the bound of `T`')),
    ('fn id<T>(x: T) -> T where U: Ord { return x; }',
     ('E0018', 1, 27, 'where clause references unknown type par')),
    ('fn f(x: int32) -> int32 { return x; }\nfn main() -> int32 {\n  return f<int32>(1);\n}',
     ('E0018', 3, 10, '`f` is not a generic function, so it tak')),
    ('fn id<T>(x: T) -> T { return x; }\nfn main() -> int32 {\n  return id(1);\n}',
     ('E0101', 3, 10, 'undefined function `id`')),
    ('struct B<T> { a: T; }\nfn main() -> int32 {\n  var b: B = { a: 1 };\n  return 0;\n}',
     ('E0102', 3, 10, 'unknown type `B`')),
    ('struct S { a: int32; method get() -> int32 { return a; } }\nfn main() -> int32 { var s: S; return s.get(); }',
     ('E0101', 1, 53, 'undefined name `a`')),
    ('struct S { a: int32; }\nfn S_get(s: S) -> int32 { return 1; }\nstruct T { method get() -> int32 { return 1; } }\nfn T_get(t: T) -> int32 { return 2; }',
     ('E0103', 3, 19, '`T_get` is already defined')),
    ('fn main() -> int32 {\n  var p: int32* = new Nope;\n  return 0;\n}',
     ('E0102', 2, 23, 'unknown type `Nope`')),
    # tagged enums and match
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) -> int32 {\n  match (t) {\n    case Num(n): { return 1; }\n    case Plus: { return 2; }\n  }\n  return 0;\n}',
     ('E0020', 3, 3, 'non-exhaustive match on `T`: variant `En')),
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) -> int64 {\n  return match (t) { case Num(n): n, case End: 0 };\n}',
     ('E0020', 3, 10, 'non-exhaustive match expression on `T`: ')),
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) {\n  match (t) {\n    case Num(n): { }\n    case Num: { }\n    default: { }\n  }\n}',
     ('E0020', 5, 5, 'duplicate match arm for variant `Num` (t')),
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) {\n  match (t) {\n    case Nope: { }\n    default: { }\n  }\n}',
     ('E0020', 4, 5, 'unknown variant `Nope` for type `T` in m')),
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) {\n  match (t) {\n    case Plus(x): { }\n    default: { }\n  }\n}',
     ('E0020', 4, 5, 'variant `Plus` carries no payload but bi')),
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) {\n  match (t) {\n    default: { }\n    default: { }\n  }\n}',
     ('E0020', 5, 5, 'only one default arm is allowed in match')),
    ('enum T { Num(int64), Plus, End }\nfn f(x: int32) {\n  match (x) {\n    default: { }\n  }\n}',
     ('E0020', 3, 10, 'match needs a tagged enum, not int32')),
    ('enum T { Num(int64), Plus, End }\nfn f() -> T {\n  return T.Nope;\n}',
     ('E0020', 3, 10, 'tagged enum `T` has no variant `Nope`')),
    ('enum T { Num(int64), Plus, End }\nfn f() -> T {\n  return Num(1, 2);\n}',
     ('E0108', 3, 10, 'constructor `Num` expects 1 argument(s),')),
    ('enum T { Num(int64), Plus, End }\nfn f() -> T {\n  return Num(1.5);\n}',
     ('E0004', 3, 14, 'float to int64 needs a cast')),
    ('enum M<X> { Just(X), Nothing }\nfn f() {\n  var a: M<int32> = Just(1);\n  var b: M<int64> = Just(2);\n  var c: int64 = 0;\n  c = match (Just(3)) { default: 1 };\n}',
     ('E0020', 6, 14, 'constructor `Just` belongs to several ta')),
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) -> int32 {\n  if (t == t) { return 1; }\n  return 0;\n}',
     ('E0202', 3, 7, 'cannot compare T with T')),
    ('enum T { Num(int64), Plus, End }\nfn f(t: T) {\n  match (t) {\n    case Num(n): 1\n  }\n}',
     ('E0002', 4, 18, "expected '{', found '1' (a match arm's b")),
    # defer and errdefer
    ('defer f();\nfn main() -> int32 { return 0; }',
     ('E0010', 1, 1, 'defer statement outside of a function')),
    ('fn main() -> int32 {\n  var x: int32 = 1;\n  defer x + 1;\n  return 0;\n}',
     ('E0010', 3, 9, 'deferred statement must be a function ca')),
    ('fn main() -> int32 {\n  errdefer x;\n  return 0;\n}',
     ('E0010', 2, 12, 'errdeferred statement must be a function')),
    ('fn main() -> int32 {\n  defer;\n  return 0;\n}',
     ('E0002', 2, 8, "expected a statement after 'defer'")),
    ('struct S { a: int32; }\nfn f() -> S {\n  var s: S;\n  errdefer s.a = 1;\n  return s;\n}',
     ('E0021', 4, 3, 'errdefer requires a scalar or pointer re')),
    ('fn main() -> int32 {\n  defer nope(1);\n  return 0;\n}',
     ('E0101', 2, 9, 'undefined function `nope`')),
    # lambdas and closures
    ('fn main() -> int32 {\n  var k: int32 = 1;\n  var f: fn(int32) -> int32 = fn(x: int32) -> int32 { return x + k; };\n  return 0;\n}',
     ('E0201', 3, 31, 'a capturing closure cannot be stored in ')),
    ('fn main() -> int32 {\n  var f: Fn(int32) -> int32 = fn(x: int32) -> int32 { return x; };\n  return f(1, 2);\n}',
     ('E0108', 3, 10, 'expected 1 argument(s), found 2')),
    ('fn g(x: int64) -> int64 { return x; }\nfn main() -> int32 {\n  var f: Fn(int32) -> int32 = &g;\n  return 0;\n}',
     ('E0201', 3, 31, 'type mismatch: expected Fn(int32) -> int')),
    ('fn main() -> int32 {\n  var f: Fn(int32) -> int32 = fn(x: int32) -> int32 { return y; };\n  return 0;\n}',
     ('E0101', 2, 62, 'undefined name `y`')),
    ("trait A { fn m(self: Self) -> int32; }\ntrait B { fn m(self: Self) -> int32; }\n"
     "impl A for int32 { fn m(self: Self) -> int32 { return 1; } }\n"
     "impl B for int32 { fn m(self: Self) -> int32 { return 2; } }\n"
     "fn main() -> int32 {\n  var x: int32 = 1;\n  return x.m();\n}",
     ("E0019", 7, 10, "method call `.m` is ambiguous")),
    ("fn f<T>(x: T) -> int64 { return f<T*>(&x); }\n"
     "fn main() -> int32 { return (int32)f<int32>(1); }",
     ("E0018", 1, 33, "generic instantiation of `f` does not end")),
]


@pytest.mark.parametrize("src,want", NEG, ids=[f"neg{i}" for i in range(len(NEG))])
def test_later_tier_diagnostic(src, want):
    code, line, col, msg = first(src)
    assert (code, line, col) == want[:3] and want[3] in msg, (code, line, col, msg)


def test_static_assert_folds_bitwise_sizeof_and_qualified_enums():
    ok("enum M { A = 4, B }\nconst N = 8;\nstatic_assert((N & 7) == 0 && (1 << 3) == N);\n"
       "static_assert(M.B == 5 && sizeof(int32[4]) == 16);" + MAIN)


def test_aggregate_elements_may_use_sizeof_and_qualified_enums():
    ok("enum M { A = 4, B }\nstruct P { a: int64; b: int64; }\n"
       "var g: int64[2] = [sizeof(P), M.B];\n"
       "fn main() -> int32 {\n  var l: P = { a: sizeof(P), b: M.A };\n"
       "  return (int32)(l.a + g[1]);\n}")


def test_not_on_pointer_is_allowed():
    ok("fn main() -> int32 {\n  var p: int32* = 0;\n  if (!p) { return 1; }\n"
       "  var q: fn() -> int32 = 0;\n  return !q + !!p;\n}")


def test_default_after_every_variant_is_an_unreachable_arm_warning():
    _, warnings = compile_to_ir("t.mettle", gpu=False, source_text=(
        "enum T { A(int32), B }\nfn f(t: T) -> int32 {\n  match (t) {\n"
        "    case A(x): { return x; }\n    case B: { return 0; }\n"
        "    default: { return 1; }\n  }\n}" + MAIN))
    assert [(w.code, w.span.line, w.span.col) for w in warnings] == [("W0001", 6, 5)]


def test_an_error_in_a_deferred_statement_is_reported_once_for_all_exit_paths():
    with pytest.raises(CompileError) as ei:
        compile_to_ir("t.mettle", gpu=False, source_text=(
            "fn f(a: int32) -> int32 {\n  defer nope(a);\n  if (a > 0) { return 1; }\n"
            "  while (a < 9) { a = a + 1; if (a == 5) { break; } }\n  return 0;\n}" + MAIN))
    assert [(d.code, d.span.line) for d in ei.value.diagnostics] == [("E0101", 2)]


def test_closures_are_refused_in_device_code():
    code, line, col, msg = first("kernel k(p: int32*) {\n  var f: fn(int32) -> int32 = "
                                 "fn(x: int32) -> int32 { return x; };\n  p[0] = f(1);\n}",
                                 gpu=True)
    assert (code, line, col) == ("E0505", 2, 31) and "device code" in msg


def test_import_str_of_a_missing_file_is_a_located_error():
    code, line, col, msg = first("fn main() -> int32 {\n  var s: string = "
                                 "import_str \"no/such/file.txt\";\n  return 0;\n}")
    assert (code, line, col) == ("E0101", 2, 19) and "no/such/file.txt" in msg


def test_import_str_embeds_bytes_verbatim(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"a\r\nb\x00c")
    src = tmp_path / "m.mettle"
    src.write_text('var blob: string = import_str "blob.bin";\n' + MAIN)
    module, _ = compile_to_ir(str(src), gpu=False)
    assert any(g.init == b"a\r\nb\x00c\x00" for g in module.globals.values())


def test_local_aggregate_elements_may_name_local_integer_consts():
    ok("fn main() -> int32 {\n  const K: int32 = 3;\n  var a: int32[3] = [K, K * 2, -K];\n"
       "  return a[1];\n}")
    code, line, col, msg = first("fn main() -> int32 {\n  var k: int32 = 3;\n"
                                 "  var a: int32[2] = [k, 1];\n  return a[0];\n}")
    assert (code, line, col) == ("E0013", 3, 22) and "compile-time constant" in msg


def test_a_bare_generic_call_is_undefined_with_a_help_and_bad_arguments_report_once():
    with pytest.raises(CompileError) as info:
        compile_to_ir("g.mettle", gpu=False, source_text=(
            "fn id<T>(x: T) -> T { return x; }\nfn main() -> int32 {\n  return id(1);\n}"))
    (d,) = info.value.diagnostics
    assert (d.code, d.message) == ("E0101", "undefined function `id`")
    assert d.help == "`id` is generic: a call spells its type arguments, `id<...>(...)`"
    with pytest.raises(CompileError) as info:
        compile_to_ir("g.mettle", gpu=False, source_text=(
            "fn id<T>(x: T) -> T { return x; }\nfn main() -> int32 {\n"
            "  return id<int32, int8>(1);\n}"))
    assert [d.code for d in info.value.diagnostics] == ["E0018"]     # no undefined `id`


def test_diagnostics_spell_generic_instances_as_written():
    # not the mangled names the monomorphizer gives the instances (Box__Maybe__int32)
    with pytest.raises(CompileError) as info:
        compile_to_ir("g.mettle", gpu=False, source_text=(
            "enum Maybe<T> { Just(T), Nothing }\nstruct Box<T> { v: T; }\n"
            "struct Pair<A, B> { a: A; b: B; }\nfn main() -> int32 {\n"
            "  var x: Box<Maybe<int32>>;\n  var y: Box<int64> = x;\n"
            "  var p: Pair<Box<int8>*, fn(int32) -> int32>;\n  var q: int32 = p;\n"
            "  x.nope();\n  return 0;\n}"))
    assert [d.message for d in info.value.diagnostics] == [
        "type mismatch: expected Box<int64>, found Box<Maybe<int32>>",
        "type mismatch: expected int32, found Pair<Box<int8>*, fn(int32) -> int32>",
        "Box<Maybe<int32>> has no field `nope`"]
