"""The canonical style, case by case (docs/reference/fmt.md): each input and its expected
output, which must also be a fixed point."""
from __future__ import annotations

import re

import pytest

from toolchain.compiler.fmt import format_source

from .corpus import REPO


def fmt(text: str) -> str:
    out = format_source(text, "case.mettle")
    assert format_source(out, "case.mettle") == out, "not idempotent"
    return out


def test_a_long_tensor_call_gets_one_argument_per_line():
    src = ("kernel k(a: uint16*, c: float32*, n: uint32) {\n"
           "  tensor_matmul(a, a, c, c, 0, 0, n, n, n, shape: m64n64k16, input_type: f16,\n"
           "                output_type: f32, lda: n, ldb: n, ldc: n, ldd: n);\n}\n")
    assert fmt(src) == """\
kernel k(a: uint16*, c: float32*, n: uint32) {
    tensor_matmul(
        a,
        a,
        c,
        c,
        0,
        0,
        n,
        n,
        n,
        shape: m64n64k16,
        input_type: f16,
        output_type: f32,
        lda: n,
        ldb: n,
        ldc: n,
        ldd: n
    );
}
"""


def test_a_call_that_fits_is_joined_onto_one_line():
    src = "fn f() {\n    g(1,\n      2,\n      name: 3);\n}\n"
    assert fmt(src) == "fn f() {\n    g(1, 2, name: 3);\n}\n"


def test_a_long_signature_gets_one_parameter_per_line():
    params = ", ".join(f"p{i}: int32" for i in range(12))
    out = fmt(f"fn f({params}) -> int32 {{ return 0; }}\n")
    assert out.startswith("fn f(\n    p0: int32,\n    p1: int32,\n")
    assert "    p11: int32\n) -> int32 { return 0; }\n" in out


def test_function_pointer_types_are_packed_line_by_line():
    ty = "fn(" + ", ".join(["int64"] * 14) + ") -> int32"
    assert fmt(f"fn f(p: int64) {{\n    var call: {ty} = ({ty})p;\n}}\n") == """\
fn f(p: int64) {
    var call: fn(int64, int64, int64, int64, int64, int64, int64, int64, int64, int64, int64, int64,
        int64, int64) -> int32 = (fn(int64, int64, int64, int64, int64, int64, int64, int64, int64,
        int64, int64, int64, int64, int64) -> int32)p;
}
"""
    short = "fn f(p: int64) {\n    var call: fn(int64, int32) -> int32 = (fn(int64, int32) -> int32)p;\n}\n"
    assert fmt(short) == short


def test_nested_blocks_are_indented_four_spaces():
    src = "fn f(n: int32) {\n  while (n > 0) {\n   if (n == 2) {\n n = 0;\n   }\n  }\n}\n"
    assert fmt(src) == """\
fn f(n: int32) {
    while (n > 0) {
        if (n == 2) {
            n = 0;
        }
    }
}
"""


def test_else_if_chains_join_the_closing_brace():
    src = ("fn f(n: int32) -> int32 {\n    if (n > 1) {\n        return 1;\n    }\n"
           "    else if (n < 0)\n    {\n        return -1;\n    }\n    else {\n"
           "        return 0;\n    }\n}\n")
    assert fmt(src) == """\
fn f(n: int32) -> int32 {
    if (n > 1) {
        return 1;
    } else if (n < 0) {
        return -1;
    } else {
        return 0;
    }
}
"""


def test_one_line_blocks_stay_on_one_line_when_they_fit():
    src = "fn f(x: int32) -> int32 {\n    if (x < 0) { return 0; } else { return x; }\n}\n"
    assert fmt(src) == src
    long = "fn f(x: int32) -> int32 {\n    if (x < 0) { return " + " + ".join(
        ["x"] * 40) + "; }\n    return x;\n}\n"
    assert "if (x < 0) {\n        return x + x" in fmt(long)


def test_each_statement_of_a_multiline_block_gets_its_own_line():
    assert fmt("fn f() {\n    var a: int32 = 1; var b: int32 = 2;\n}\n") == \
        "fn f() {\n    var a: int32 = 1;\n    var b: int32 = 2;\n}\n"


def test_empty_blocks():
    assert fmt("fn f() { }\nfn g() {\n\n}\n") == "fn f() {}\n\nfn g() {}\n"
    assert fmt("fn f() {\n  // nothing yet\n}\n") == "fn f() {\n    // nothing yet\n}\n"
    assert fmt("struct S {}\n") == "struct S {}\n"


def test_comments_at_block_ends_stay_inside_the_block():
    src = "fn f(x: int32) {\n    x = 1; // set\n        // last words\n}\n// after\n"
    assert fmt(src) == "fn f(x: int32) {\n    x = 1; // set\n    // last words\n}\n// after\n"


def test_trailing_comments_keep_their_aligned_column():
    src = ("const A: int32 = 1;      // one\nconst BB: int32 = 22;    // twenty-two\n"
           "                         // and more\n")
    assert fmt(src) == src


def test_a_line_comment_inside_a_list_breaks_it():
    src = "fn f() {\n    g(1, // why\n      2);\n}\n"
    assert fmt(src) == "fn f() {\n    g(\n        1, // why\n        2\n    );\n}\n"


def test_a_comment_on_its_own_line_inside_a_list_breaks_it():
    src = "fn f() {\n    g(1,\n      // own\n      2);\n    h(/* a\n b */ 3);\n}\n"
    assert fmt(src) == ("fn f() {\n    g(\n        1,\n        // own\n        2\n    );\n"
                        "    h( /* a\n b */ 3);\n}\n")


def test_blank_lines():
    src = ("import \"std/io\";\nimport \"std/mem\";\n\n\n\nconst A = 1;\nfn f() {\n\n"
           "    var x: int32 = 1;\n\n\n    x = 2;\n\n}\nfn g() { }\n")
    assert fmt(src) == """\
import "std/io";
import "std/mem";

const A = 1;

fn f() {
    var x: int32 = 1;

    x = 2;
}

fn g() {}
"""


def test_spacing_around_operators_commas_and_keywords():
    src = ("fn f(p:int32*,x:int32,s:S*)->int64{\n"
           "  var y:int64=(int64)-x+*p*2-s->v;\n"
           "  for i in 0..=x{y+=i;}\n"
           "  if(!(x==1)&&~x>0){return sizeof(S);}\n"
           "  return y<<1;\n}\n")
    assert fmt(src) == """\
fn f(p: int32*, x: int32, s: S*) -> int64 {
    var y: int64 = (int64)-x + *p * 2 - s->v;
    for i in 0..=x { y += i; }
    if (!(x == 1) && ~x > 0) { return sizeof(S); }
    return y << 1;
}
"""


def test_declarations_attributes_and_dispatch():
    src = ("@inline export fn sq(x:int32)->int32{return x*x;}\n"
           "extern kernel(block=256) vadd(a:float32*,n:int32);\n"
           "kernel(block=(64,4,1),per=warp) k(a:float32*){\n"
           "  workgroup var t:float32[256];\n  barrier(workgroup,acq_rel);\n"
           "  @unroll(4) for j in 0..4 { t[j]=a[j]; }\n}\n"
           "fn h(d:int64,n:int32,s:int64){\n  dispatch vadd[work:n](d,n) on s;\n"
           "  dispatch vadd [ (n+255)/256 , 256 ] (d, n);\n}\n")
    assert fmt(src) == """\
@inline export fn sq(x: int32) -> int32 { return x * x; }
extern kernel(block = 256) vadd(a: float32*, n: int32);

kernel(block = (64, 4, 1), per = warp) k(a: float32*) {
    workgroup var t: float32[256];
    barrier(workgroup, acq_rel);
    @unroll(4) for j in 0..4 { t[j] = a[j]; }
}

fn h(d: int64, n: int32, s: int64) {
    dispatch vadd[work: n](d, n) on s;
    dispatch vadd[(n + 255) / 256, 256](d, n);
}
"""


def test_switch_cases():
    src = ("fn f(v: int32) -> int32 {\nvar b: int32 = 0;\nswitch (v & 7) {\n"
           "case 0: b = 0; break;\ncase 1..3:\nb = 1;\nbreak;\ndefault: b = 3;\n}\n"
           "return b;\n}\n")
    assert fmt(src) == """\
fn f(v: int32) -> int32 {
    var b: int32 = 0;
    switch (v & 7) {
        case 0: b = 0; break;
        case 1..3:
            b = 1;
            break;
        default: b = 3;
    }
    return b;
}
"""


def test_struct_enum_and_aggregate_literals():
    src = ("struct P{x:int32;y:int32;}\nenum E{A,B=5,\nC}\n"
           "var o:P={x:1,y:2};\nvar t:int32[3]=[1,2,3,];\nvar z:int32[8]=[0;8];\n")
    assert fmt(src) == """\
struct P { x: int32; y: int32; }

enum E {
    A,
    B = 5,
    C
}

var o: P = { x: 1, y: 2 };
var t: int32[3] = [1, 2, 3,];
var z: int32[8] = [0; 8];
"""


def test_bodies_without_braces_keep_their_line():
    src = "fn f(x: int32) {\n  if (x == 1) return;\n  while (x > 0)\n  x -= 1;\n}\n"
    assert fmt(src) == \
        "fn f(x: int32) {\n    if (x == 1) return;\n    while (x > 0)\n        x -= 1;\n}\n"


def test_wrapped_expressions_keep_their_breaks_one_level_deeper():
    src = "fn f(a: int32, b: int32) -> bool {\n  return a > 0 &&\n  b > 0;\n}\n"
    assert fmt(src) == "fn f(a: int32, b: int32) -> bool {\n    return a > 0 &&\n        b > 0;\n}\n"


@pytest.mark.parametrize("literal", ["0xFF", "0b101", "1.50", "1e3", "2.5E-3", "'A'", "'\\n'"])
def test_literals_are_kept_as_written(literal):
    assert fmt(f"const X = {literal};\n") == f"const X = {literal};\n"


def test_strings_are_kept_as_written():
    src = ('import "std/io";\n\nfn main() -> int32 {\n    println("a\\tb  \\"c\\"");\n'
           '    print("two\n  lines   \n");\n    return 0;\n}\n')
    assert fmt(src) == src


def test_line_endings_tabs_and_the_final_newline():
    assert fmt("fn f() {\r\n\tg();\r\n}") == "fn f() {\n    g();\n}\n"
    assert fmt("\n\n// only a comment\n\n\n") == "// only a comment\n"
    assert fmt("") == ""


def test_the_style_page_examples_are_formatted():
    page = (REPO / "docs" / "reference" / "fmt.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```mettle\n(.*?)^```", page, re.M | re.S)
    assert blocks
    for block in blocks:
        assert fmt(block) == block


# ---------------------------------------------------------------- the later tier
def test_match_arms_one_per_line():
    src = ("enum Tok{Num(int64),Plus,End}\n"
           "fn f(t:Tok)->int64{\nmatch(t){\ncase Num(n):{return n;}\ncase Plus:{return 1;}\n"
           "default:{}\n}\nreturn match(t){case Num(n):n,case Plus:1\ndefault:0};\n}\n"
           "fn g(t: Tok) -> int64 { return match (t) { case Num(n): n, default: 0 }; }\n")
    assert fmt(src) == """\
enum Tok { Num(int64), Plus, End }

fn f(t: Tok) -> int64 {
    match (t) {
        case Num(n): { return n; }
        case Plus: { return 1; }
        default: {}
    }
    return match (t) {
        case Num(n): n,
        case Plus: 1
        default: 0
    };
}

fn g(t: Tok) -> int64 { return match (t) { case Num(n): n, default: 0 }; }
"""


def test_a_match_inside_a_call_hangs_below_it():
    src = ("fn f(m: Maybe<int64>) {\n  print(match (m) { case Just(v): v\n"
           "  case Nothing: -1 });\n}\n")
    assert fmt(src) == """\
fn f(m: Maybe<int64>) {
    print(match (m) {
        case Just(v): v
        case Nothing: -1
    });
}
"""


def test_generic_fn_with_where_and_type_arguments():
    src = ("struct Pair < A , B > { a : A ; b : B ; }\n"
           "fn max_of < T : Ordered + Hash > ( xs : T * , n : int64 ) -> T where T : Sized {\n"
           "var p : Pair < int32 , Pair < int8 , T > > ;\nvar q:Box<T>* =new Box<T>;\n"
           "return first < T > ( xs , n ) ;\n}\n"
           "fn lt(a: int32, b: int32, c: int32) -> bool { return a < b * c; }\n")
    assert fmt(src) == """\
struct Pair<A, B> { a: A; b: B; }

fn max_of<T: Ordered + Hash>(xs: T*, n: int64) -> T where T: Sized {
    var p: Pair<int32, Pair<int8, T> >;
    var q: Box<T>* = new Box<T>;
    return first<T>(xs, n);
}

fn lt(a: int32, b: int32, c: int32) -> bool { return a < b * c; }
"""


def test_traits_impl_blocks_and_methods():
    src = ("trait Shape{fn area(self:Self)->float64;fn name(self:Self)->cstring;}\n"
           "trait Marker;\n"
           "struct Sq{side:float64;\nmethod twice()->float64{return this.side*2.0;}\n}\n"
           "impl Shape for Sq{\n@inline fn area(self:Self)->float64{return self.side*self.side;}\n"
           "fn name(self:Self)->cstring{return \"sq\";}\n}\n"
           "impl Marker for int32;\n")
    assert fmt(src) == """\
trait Shape { fn area(self: Self) -> float64; fn name(self: Self) -> cstring; }
trait Marker;

struct Sq {
    side: float64;
    method twice() -> float64 { return this.side * 2.0; }
}

impl Shape for Sq {
    @inline fn area(self: Self) -> float64 { return self.side * self.side; }
    fn name(self: Self) -> cstring { return "sq"; }
}

impl Marker for int32;
"""


def test_a_closure_argument_keeps_its_call_on_one_line():
    src = ("fn f(base: int32) -> int32 {\n"
           "  var add: Fn(int32) -> int32 = fn(x:int32)->int32{return x+base;};\n"
           "  return apply(fn(x: int32) -> int32 {\n  var y: int32 = x * 2;\n  return y;\n"
           "  }, 3);\n}\n")
    assert fmt(src) == """\
fn f(base: int32) -> int32 {
    var add: Fn(int32) -> int32 = fn(x: int32) -> int32 { return x + base; };
    return apply(fn(x: int32) -> int32 {
        var y: int32 = x * 2;
        return y;
    }, 3);
}
"""


def test_defer_errdefer_static_assert_and_import_str():
    src = ("fn f(p: int64) -> int32 {\n  defer   free(p);\n  errdefer{log(1);\nlog(2);}\n"
           "  defer n=n+1;\n  static_assert( sizeof(int64)==8 );\n"
           "  var s: string = import_str   \"a.txt\";\n  return 0;\n}\n")
    assert fmt(src) == """\
fn f(p: int64) -> int32 {
    defer free(p);
    errdefer {
        log(1);
        log(2);
    }
    defer n = n + 1;
    static_assert(sizeof(int64) == 8);
    var s: string = import_str "a.txt";
    return 0;
}
"""


def test_a_method_after_a_field_without_separator_is_a_member():
    src = ("struct Item {\n    id: int64\n    method m() -> int64 { return this.id; } y: int32\n}\n"
           "struct T { a: int32; method m() -> int32 { return 1; } b: int32 }\n")
    assert fmt(src) == """\
struct Item {
    id: int64
    method m() -> int64 { return this.id; }
    y: int32
}

struct T { a: int32; method m() -> int32 { return 1; } b: int32 }
"""


def test_nested_lambdas_and_a_lambda_in_a_broken_list_indent_from_their_line():
    long = "a" * 40 + ", " + "b" * 50
    src = ("fn f() {\n  run(fn() {\n    each(items, fn(x: int32) {\n      use(x);\n    });\n  });\n"
           f"  foo({long}, fn(x: int32) {{\n  use(x);\n  }});\n}}\n")
    assert fmt(src) == f"""\
fn f() {{
    run(fn() {{
        each(items, fn(x: int32) {{
            use(x);
        }});
    }});
    foo(
        {"a" * 40},
        {"b" * 50},
        fn(x: int32) {{
            use(x);
        }}
    );
}}
"""
