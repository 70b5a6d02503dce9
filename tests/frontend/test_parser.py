"""Parser golden tests: source -> compact S-expression of the AST (tests/frontend/sexpr.py)."""

import pytest

from tests.frontend.sexpr import sexpr
from toolchain.compiler.frontend import ast as A
from toolchain.compiler.frontend import parse_source


def body(src):
    """S-expressions of the statements of `fn f() { src }`."""
    fn = parse_source("fn f() {\n" + src + "\n}", "t.mettle").items[0]
    return [sexpr(s) for s in fn.body.stmts]


def expr(src):
    return body(f"x = {src}")[0][len("(Assign op== x "):-1]


@pytest.mark.parametrize("src,tree", [
    ("a + b << c", "(<< (+ a b) c)"),
    ("a < b == c", "(== (< a b) c)"),
    ("a || b && c | d ^ e & f == g < h << i + j * k",
     "(|| a (&& b (| c (^ d (& e (== f (< g (<< h (+ i (* j k))))))))))"),
    ("a - b - c", "(- (- a b) c)"),
    ("a / b % c * d", "(* (% (/ a b) c) d)"),
    ("a >= b != c <= d", "(!= (>= a b) (<= c d))"),
    ("(int32)a * b", "(* (Cast int32 a) b)"),
    ("-(int32)x.y", "(- (Cast int32 (Member x name=y)))"),
    ("(float32)-x", "(Cast float32 (- x))"),
    ("- - x", "(- (- x))"),
    ("!~x", "(! (~ x))"),
    ("*p + &q", "(+ (Deref p) (AddrOf q))"),
    ("p->x.y[3]", "(Index (Member (Arrow p name=x) name=y) 3)"),
    ("f(a)(b)[c]", "(Index (Call (Call f args=[a]) args=[b]) c)"),
])
def test_precedence(src, tree):
    assert expr(src) == tree


@pytest.mark.parametrize("src,tree", [
    ("(a) - b", "(- a b)"),
    ("(f)(x)", "(Call f args=[x])"),
    ("(E)x", "(Cast E x)"),
    ("(E)3", "(Cast E 3)"),
    ("(bool)-x", "(Cast bool (- x))"),
    ("(cstring)p", "(Cast cstring p)"),
    ("(int32*)p", "(Cast int32* p)"),
    ("(Cell*)p", "(Cast Cell* p)"),
    ("(uint8[4]*)p", "(Cast uint8[4]* p)"),
    ("(fn(int32) -> int32)p", "(Cast (FnPtrType params=[int32] int32) p)"),
    ("(a + b) * c", "(* (+ a b) c)"),
])
def test_cast_disambiguation(src, tree):
    assert expr(src) == tree


def test_newline_terminates_statements():
    assert body("x = x + 1\n*p = 3\nf()\n(g)(1)\ny = a +\n  b\nreturn") == [
        "(Assign op== x (+ x 1))", "(Assign op== (Deref p) 3)", "(ExprStmt (Call f))",
        "(ExprStmt (Call g args=[1]))", "(Assign op== y (+ a b))", "(Return)"]


def test_newlines_inside_brackets_do_not_terminate():
    assert body("f(a,\n  b)\nx = (a\n  * b)") == [
        "(ExprStmt (Call f args=[a b]))", "(Assign op== x (* a b))"]


def test_semicolons_and_brace_end_statements():
    assert body("x = 1; y = 2; { z = 3 }") == [
        "(Assign op== x 1)", "(Assign op== y 2)", "(Block stmts=[(Assign op== z 3)])"]


def test_compound_assignment():
    assert body("a[f()] += 1\nx <<= 2") == [
        "(Assign op=+= (Index a (Call f)) 1)", "(Assign op=<<= x 2)"]


def test_if_else_if_is_flattened():
    assert body("if (a) { } else if (b) { } else { x = 1 }") == [
        "(If a (Block) (If b (Block) (Block stmts=[(Assign op== x 1)])))"]


def test_loops():
    assert body("scan: for r in 0..rows { for c: int64 in 0..=cols { continue scan } }\n"
                "for (var j: int32 = 0; j < n; j += 1) { }\nfor (;;) { break }\n"
                "@unroll(4) @simd while (x) { }\nouter: while (1) { break outer }") == [
        "(ForRange var=r 0 rows (Block stmts=[(ForRange var=c int64 0 cols inclusive=True "
        "(Block stmts=[(Continue label=scan)]))]) label=scan)",
        "(For (VarDecl name=j int32 0) (< j n) (Assign op=+= j 1) (Block))",
        "(For (Block stmts=[(Break)]))",
        "(While x (Block) attrs=[(Attribute name=unroll args=[4]) (Attribute name=simd)])",
        "(While 1 (Block stmts=[(Break label=outer)]) label=outer)"]


def test_range_with_spaced_equals_is_not_inclusive_and_is_an_error():
    with pytest.raises(Exception):
        parse_source("fn f() { for k in 0.. =n { } }", "t")


def test_switch_fallthrough_structure_and_ranges():
    assert body("switch (v) { case 1: x = 1; break; case 3..9, 12: case 20: default: x = 0 }") \
        == ["(Switch v cases=[(SwitchCase values=[1] body=[(Assign op== x 1) (Break)]) "
            "(SwitchCase values=[12] ranges=[(3 9)]) (SwitchCase values=[20]) "
            "(SwitchCase body=[(Assign op== x 0)] is_default=True)])"]


def test_dispatch_forms():
    assert body("dispatch vadd[(n + 255) / 256, 256](da, db, n)\n"
                "dispatch k[grid: (x, 1, 1), block: (64, 4, 1), shared: 1024, stream: s](a)\n"
                "dispatch k[block: (1, 1, 1), grid: g, work: n]() on s\n"
                "dispatch (h)[1, 32](a)") == [
        "(Dispatch vadd args=[da db n] grid=[(/ (+ n 255) 256)] block=[256])",
        "(Dispatch k args=[a] named=True grid=[x 1 1] block=[64 4 1] 1024 s)",
        "(Dispatch k named=True grid=[g] block=[1 1 1] n s)",
        "(Dispatch h args=[a] grid=[1] block=[32])"]


def test_gpu_kernel_declarations_storage_and_barriers():
    m = parse_source("kernel(block = (64, 4, 1), per = warp) k(a: float32*) {\n"
                     "workgroup var t: float32[256]; private var s: int32[4]\n"
                     "workgroup var p: float32*\nbarrier(workgroup, global, acq_rel)\n"
                     "barrier()\n}\nkernel plain(n: int32) { }\nkernel(block = 256) one() { }",
                     "k.mettle")
    k, plain, one = m.items
    assert (k.is_kernel, k.kernel_block, k.kernel_per) == (True, (64, 4, 1), "warp")
    assert [sexpr(s) for s in k.body.stmts] == [
        "(VarDecl name=t float32[256] storage=workgroup)",
        "(VarDecl name=s int32[4] storage=private)",
        "(VarDecl name=p float32* storage=workgroup)",
        "(Barrier regions=[workgroup global] order=acq_rel)", "(Barrier)"]
    assert plain.is_kernel and plain.kernel_block is None
    assert one.kernel_block == (256, 1, 1)


def test_extern_export_decorators_and_forward_decls():
    m = parse_source('extern kernel(block = 256) vadd(a: float32*, n: int32);\n'
                     'extern fn c_abs(v: int32) -> int32 = "abs";\n'
                     'extern fn sqrtf(x: float32) -> float32\n'
                     'extern var env: cstring* = "environ";\n'
                     '@inline @simd! export fn sq(x: int32): int32 { return x * x; }\n'
                     'fn later() -> int32;\nexport struct P { x: int32 }\n', "e.mettle")
    vadd, c_abs, sqrtf, env, sq, later, p = m.items
    assert isinstance(vadd, A.ExternKernel) and vadd.kernel_block == (256, 1, 1)
    assert (c_abs.is_extern, c_abs.link_name, sqrtf.link_name) == (True, "abs", None)
    assert (env.is_extern, env.link_name, env.is_global) == (True, "environ", True)
    assert [d.name for d in sq.decorators] == ["inline", "simd!"] and sq.exported
    assert later.body is None and sexpr(later.ret) == "int32"
    assert p.exported


def test_calls_with_named_arguments_and_keyword_values():
    assert expr("atomic_fetch_add(q, i, 1, order: acq_rel, scope: workgroup)") == (
        "(Call atomic_fetch_add args=[q i 1] named_args=[(order acq_rel) (scope workgroup)])")
    src = "fn f() { tensor_mma(a, b, c, d, shape: m16n16k16, rounding: default) }"
    call = parse_source(src, "t").items[0].body.stmts[0].expr
    assert [n.name for n in call.named_args] == ["shape", "rounding"]
    name, value, span = call.named_args[1]
    assert (name, value.name, span.col) == ("rounding", "default", src.index("rounding") + 1)


def test_literals_sizeof_and_aggregates():
    m = parse_source("var t: int32[3] = [1, 2, 3]; var z: int32[4] = [0; 4]\n"
                     "var c: Cell = {v: 1, w: 2}; const N = 64; const S: float64 = 0.5\n"
                     'var s: string = "hi"; var b: bool = true; var n: int64 = sizeof(Cell*)',
                     "g")
    assert [sexpr(i) for i in m.items] == [
        "(VarDecl name=t int32[3] (ArrayLit elems=[1 2 3]) is_global=True)",
        "(VarDecl name=z int32[4] (ArrayRepeat 0 4) is_global=True)",
        "(VarDecl name=c Cell (StructLit fields=[(v 1) (w 2)]) is_global=True)",
        "(ConstDecl name=N 64 is_const=True is_global=True)",
        "(ConstDecl name=S float64 0.5 is_const=True is_global=True)",
        "(VarDecl name=s string b'hi' is_global=True)",
        "(VarDecl name=b bool true is_global=True)",
        "(VarDecl name=n int64 (SizeOf Cell*) is_global=True)"]


def test_imports_structs_enums_fn_pointers():
    m = parse_source('import "std/io"; import "lib/vec" as vec\n'
                     'import { add, Vec } from "lib/vec" if linux\n'
                     "struct S { a: int32; b: vec.Vec*\n c: float32 }\n"
                     "enum E { A, B = 5, C, }\nvar fp: fn(int32, int32) -> int32 = &area", "i")
    assert [sexpr(i) for i in m.items] == [
        "(Import path=std/io)", "(Import path=lib/vec alias=vec)",
        "(Import path=lib/vec names=[(add) (Vec)] guard=linux)",
        "(StructDecl name=S fields=[(StructField name=a int32) (StructField name=b vec.Vec*) "
        "(StructField name=c float32)])",
        "(EnumDecl name=E variants=[(EnumVariant name=A) (EnumVariant name=B 5) "
        "(EnumVariant name=C)])",
        "(VarDecl name=fp (FnPtrType params=[int32 int32] int32) (AddrOf area) is_global=True)"]


def test_every_node_has_a_span_and_expressions_a_ty_slot():
    m = parse_source("fn f(a: int32*) -> int32 { var x: int32 = a[0] + 1; return x }", "s")
    stack = [m]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Node):
            assert n.span is not None and n.span.file == "s"
            if isinstance(n, A.Expr):
                assert n.ty is None
            stack += [getattr(n, f) for f in n.__dataclass_fields__]
        elif isinstance(n, list):
            stack += n


def test_expression_span_covers_the_expression():
    e = parse_source("fn f() {\n  x = foo(a, b) + 1\n}", "s").items[0].body.stmts[0].value
    assert (e.span.line, e.span.col, e.span.length) == (2, 7, 13)
