"""One small program per diagnostic: the FIRST error has the expected code and line:col."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir
from tests.frontend_sema.cases import NEG

# name -> (line, col) of the first diagnostic, checked by hand against each source.
WHERE = {
    "var_no_type_global": (1, 5), "float_to_int": (3, 18), "float_mod": (3, 20),
    "const_div_zero": (3, 14), "undefined_name": (2, 10), "host_block_undefined": (2, 18),
    "use_before_assign": (3, 10), "pointer_condition": (3, 7), "int_to_ptr": (3, 19),
    "untyped_pointer_to_closure": (2, 31), "closure_to_untyped_pointer": (3, 19),
    "address_of_generic": (3, 31), "tagged_enum_field": (4, 17),
    "missing_return": (1, 4), "wrong_arg_count": (3, 10), "no_such_field": (4, 10),
    "break_outside": (2, 3), "switch_enum_not_exhaustive": (3, 3), "case_not_const": (3, 21),
    "assign_const": (3, 3), "unknown_type": (2, 10), "kernel_returns": (1, 23),
    "kernel_struct_ptr": (2, 10), "kernel_block_volume": (1, 29), "kernel_per_warp": (1, 32),
    "index_in_helper": (2, 10), "barrier_in_helper": (2, 3), "kernel_array_local": (2, 7),
    "kernel_addr_local": (3, 19), "workgroup_init": (2, 33), "workgroup_rebind": (3, 3),
    "atomic_float_ptr": (2, 16), "atomic_load_release": (2, 44),
    "atomic_wg_device_scope": (3, 32), "cas_failure_stronger": (2, 94),
    "async_bad_transaction": (3, 46), "async_wait_range": (2, 19),
    "ballot_float_word": (2, 42), "tensor_transfer_missing_extent": (2, 3),
    "tensor_mma_missing_type": (2, 3), "dispatch_in_kernel": (2, 3),
    "dispatch_arg_count": (3, 3), "dispatch_zero_grid": (3, 14),
    "dispatch_block_mismatch": (3, 20), "dispatch_stream_twice": (3, 65),
    "literal_to_struct": (3, 14), "literal_assigned_to_enum": (4, 7),
    "literal_argument_enum": (4, 8), "literal_returned_as_enum": (3, 10),
}


@pytest.mark.parametrize("name,gpu,src,code", NEG, ids=[c[0] for c in NEG])
def test_diagnostic(name, gpu, src, code):
    with pytest.raises(CompileError) as ei:
        compile_to_ir(f"{name}.mettle", gpu=gpu, source_text=src)
    first = ei.value.diagnostics[0]
    assert (first.code, first.span.line, first.span.col) == (code, *WHERE[name]), \
        [(d.code, str(d.span), d.message) for d in ei.value.diagnostics]
    assert first.severity == "error"


def test_no_cascade_after_failed_declaration():
    src = "fn main() -> int32 {\n  var f: float64 = 1.5;\n  var i: int32 = f;\n  return i;\n}"
    with pytest.raises(CompileError) as ei:
        compile_to_ir("c.mettle", gpu=False, source_text=src)
    assert [d.code for d in ei.value.diagnostics] == ["E0004"]


@pytest.mark.parametrize("body", [
    "  match (e) {\n    case A(x): { return x; }\n    case A(y): { return y; }\n"
    "    default: { return 0; }\n  }",
    "  if (nope) { return 1; } else { return 2; }",
    "  switch (nope) { case 1: return 1; default: return 2; }"],
    ids=["match", "if", "switch"])
def test_no_missing_return_after_a_failed_statement_that_returns(body):
    # the failed statement may have been the return path: E0011 would be a cascade
    src = f"enum E {{ A(int64), B }}\nfn f(e: E) -> int64 {{\n{body}\n}}\n" \
          "fn main() -> int32 { return 0; }"
    with pytest.raises(CompileError) as ei:
        compile_to_ir("r.mettle", gpu=False, source_text=src)
    codes = [d.code for d in ei.value.diagnostics]
    assert len(codes) == 1 and codes[0] in ("E0020", "E0101"), codes


def test_a_closure_is_opaque():
    # Fn values are pointers to a record underneath; none of the pointer operations may
    # reach it (h[0] and *h read the record, h.code(1) called its code without the
    # environment, h + 1 and h < g compiled)
    lines = ["var a: int64 = h[0];", "var b: int64 = *h;", "var c: Fn(int64) -> int64 = h + 1;",
             "var d: int64 = h.code;", "var e: int64 = h->code(1);", "var f: bool = h < h;",
             "var k: int64 = h - h;", "var m: bool = h == h || h != 0;"]
    src = ("fn main() -> int32 {\n  var h: Fn(int64) -> int64 = fn(x: int64) -> int64 "
           "{ return x; };\n" + "".join(f"  {x}\n" for x in lines) + "  return 0;\n}")
    with pytest.raises(CompileError) as ei:
        compile_to_ir("o.mettle", gpu=False, source_text=src)
    assert [(d.code, d.span.line) for d in ei.value.diagnostics] == [
        ("E0206", 3), ("E0207", 4), ("E0202", 5), ("E0205", 6), ("E0205", 7), ("E0202", 8),
        ("E0202", 9)]                                   # == and != stay allowed


def test_errors_are_collected_across_functions():
    src = ("fn a() -> int32 { return x; }\nfn b() -> int32 { return y; }\n"
           "fn main() -> int32 { return 0; }")
    with pytest.raises(CompileError) as ei:
        compile_to_ir("m.mettle", gpu=False, source_text=src)
    assert [(d.code, d.span.line) for d in ei.value.diagnostics] == [("E0101", 1),
                                                                       ("E0101", 2)]


def test_unreachable_warning():
    src = "fn main() -> int32 {\n  return 0;\n  var x: int32 = 1;\n}"
    _, warnings = compile_to_ir("w.mettle", gpu=False, source_text=src)
    assert [(w.code, w.span.line, w.severity) for w in warnings] == [("W0001", 3, "warning")]


@pytest.mark.parametrize("src, help", [
    ("fn main() -> int32 {\n  var count: int32 = 1;\n  return coutn;\n}",
     "did you mean `count`?"),
    ("fn println_int(n: int64) {}\nfn println_f64(v: float64) {}\n"
     "fn println_f32(v: float32) {}\nfn main() -> int32 {\n  println_float(1.5);\n"
     "  return 0;\n}", "did you mean `println_int`, `println_f64` or `println_f32`?"),
    ("fn main() -> int32 {\n  var count: int32 = 1;\n  return zzz;\n}", None)],
    ids=["local", "function", "nothing-close"])
def test_an_undefined_name_suggests_the_closest_visible_ones(src, help):
    with pytest.raises(CompileError) as ei:
        compile_to_ir("n.mettle", gpu=False, source_text=src)
    (d,) = ei.value.diagnostics
    assert d.code == "E0101" and d.help == help


def test_an_unknown_type_is_reported_once_with_a_suggestion_and_no_cascade():
    # the declaration's type was reported twice (recovery resolved it again), and the
    # initializer was then checked against the int64 stand-in (E0004)
    src = ("struct Point { x: int64; }\nfn main() -> int32 {\n  var f: float = 1.5;\n"
           "  var p: Piont;\n  var c: char = 0;\n  return 0;\n}")
    with pytest.raises(CompileError) as ei:
        compile_to_ir("t.mettle", gpu=False, source_text=src)
    assert [(d.code, d.span.line, d.help) for d in ei.value.diagnostics] == [
        ("E0102", 3, "did you mean `float32`?"), ("E0102", 4, "did you mean `Point`?"),
        ("E0102", 5, "did you mean `uint8` or `int8`?")]


# `void` is a return type only (LANGUAGE.md section 2): every other place it was accepted
# silently (a `void*`, a `sizeof(void)` of 0, parameters, fields and elements of no size).
VOID_PLACES = {
    "pointer": ("fn main() -> int32 { var p: void* = 0; return 0; }", 29,
                "`void*` is not a type: void is a return type only"),
    "sizeof": ("fn main() -> int32 { return (int32)sizeof(void); }", 43,
               "`sizeof`'s operand cannot have type void"),
    "parameter": ("fn f(x: void) { }\nfn main() -> int32 { return 0; }", 9,
                  "a parameter cannot have type void"),
    "field": ("struct S { v: void; }\nfn main() -> int32 { return 0; }", 15,
              "a field cannot have type void"),
    "element": ("fn main() -> int32 { var a: void[3]; return 0; }", 29,
                "an array element cannot have type void"),
    "global": ("var g: void;\nfn main() -> int32 { return 0; }", 8,
               "a global cannot have type void"),
    "function value parameter": ("fn main() -> int32 { var h: fn(void) -> int32; return 0; }",
                                 32, "a parameter cannot have type void"),
    "variable": ("fn main() -> int32 { var x: void; return 0; }", 29,
                 "a variable cannot have type void"),
}


@pytest.mark.parametrize("place", VOID_PLACES)
def test_void_is_a_return_type_only(place):
    src, col, message = VOID_PLACES[place]
    with pytest.raises(CompileError) as ei:
        compile_to_ir("v.mettle", gpu=False, source_text=src)
    first = ei.value.diagnostics[0]
    assert (first.code, first.span.line, first.span.col, first.message) == \
        ("E0201", 1, col, message), [(d.code, str(d.span), d.message)
                                     for d in ei.value.diagnostics]


def test_void_returns_stay_legal():
    compile_to_ir("r.mettle", gpu=False, source_text=(
        "fn f() -> void { }\nfn g() { }\n"
        "fn main() -> int32 { var h: fn() -> void = f; var k: Fn() -> void = g; h(); k();"
        " return 0; }"))


def test_function_types_as_elements_are_shown_in_parentheses():
    src = ("fn main() -> int32 {\n  var fs: (Fn(int32) -> int32)[3];\n"
           "  var x: int32 = fs;\n  return 0;\n}")
    with pytest.raises(CompileError) as ei:
        compile_to_ir("p.mettle", gpu=False, source_text=src)
    assert ei.value.diagnostics[0].message == \
        "type mismatch: expected int32, found (Fn(int32) -> int32)[3]"


# (where the constant stands, the constant) -> (col, code, message): only the integer 0 is
# a null pointer; a bool or a float constant is no integer, and no cast makes it a pointer
POINTER_CONSTANTS = {
    ("local", "false"): (38, "E0201", "type mismatch: expected int32*, found bool"),
    ("local", "0.0"): (38, "E0201", "type mismatch: expected int32*, found float64"),
    ("local", "3.5"): (38, "E0201", "type mismatch: expected int32*, found float64"),
    ("local", "7"): (38, "E0203", "integer to int32* needs a cast"),
    ("local", "1 > 2"): (38, "E0201", "type mismatch: expected int32*, found bool"),
    ("local", "!1"): (38, "E0201", "type mismatch: expected int32*, found bool"),
    ("global", "false"): (17, "E0201", "type mismatch: expected int32*, found bool"),
    ("global", "2.5"): (17, "E0201", "type mismatch: expected int32*, found float64"),
    ("global", "7"): (17, "E0203", "integer to int32* needs a cast"),
}


@pytest.mark.parametrize("where,value", POINTER_CONSTANTS)
def test_only_the_integer_zero_is_a_null_pointer_constant(where, value):
    col, code, message = POINTER_CONSTANTS[where, value]
    src = (f"var g: int32* = {value};\nfn main() -> int32 {{ return 0; }}" if where == "global"
           else f"fn main() -> int32 {{ var p: int32* = {value}; return 0; }}")
    with pytest.raises(CompileError) as ei:
        compile_to_ir("n.mettle", gpu=False, source_text=src)
    first = ei.value.diagnostics[0]
    assert (first.code, first.span.line, first.span.col, first.message) == \
        (code, 1, col, message), [(d.code, str(d.span), d.message)
                                  for d in ei.value.diagnostics]


@pytest.mark.parametrize("where", ["local", "global"])
def test_the_integer_zero_stays_a_null_pointer(where):
    src = ("var g: int32* = 0;\nfn main() -> int32 { return 0; }" if where == "global"
           else "fn main() -> int32 { var p: fn(int32) -> int32 = 0; var q: int32* = 0;"
           " return 0; }")
    compile_to_ir("z.mettle", gpu=False, source_text=src)
