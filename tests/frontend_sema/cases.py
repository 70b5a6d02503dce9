"""Negative programs: (name, gpu, source, expected code, line, col) — one per diagnostic.

Columns point at the construct the message is about (the offending operand, name or
statement keyword), so each expectation is checked by hand against the source text.
"""
K = "kernel k(p: float32*, u: uint32*, n: int32) {\n"
NEG = [
    ("var_no_type_global", False, "var x;\nfn main() -> int32 { return 0; }", "E0003"),
    ("float_to_int", False, "fn main() -> int32 {\n  var f: float64 = 1.5;\n"
     "  var i: int32 = f;\n  return i;\n}", "E0004"),
    ("float_mod", False, "fn main() -> int32 {\n  var f: float64 = 1.5;\n"
     "  var g: float64 = f % 2.0;\n  return 0;\n}", "E0004"),
    ("const_div_zero", False, "fn main() -> int32 {\n  var a: int32 = 4;\n"
     "  return a / 0;\n}", "M0116"),
    ("undefined_name", False, "fn main() -> int32 {\n  return nope;\n}", "E0101"),
    ("host_block_undefined", False, "fn main() -> int32 {\n  var i: int32 = block.x;\n"
     "  return i;\n}", "E0101"),
    ("use_before_assign", False, "fn main() -> int32 {\n  var x: int32;\n"
     "  return x + 1;\n}", "E0104"),
    ("pointer_condition", False, "fn main() -> int32 {\n  var p: int32* = 0;\n"
     "  if (p) { return 1; }\n  return 0;\n}", "E0016"),
    # a literal where a struct or a tagged enum is wanted (an internal error before)
    ("literal_to_struct", False, "struct P { a: int64; }\nfn main() -> int32 {\n"
     "  var p: P = 0;\n  return 0;\n}", "E0201"),
    ("literal_assigned_to_enum", False, "enum M { Just(int64), Nothing }\n"
     "fn main() -> int32 {\n  var m: M = Nothing;\n  m = 7;\n  return 0;\n}", "E0201"),
    ("literal_argument_enum", False, "enum M { Just(int64), Nothing }\nfn take(m: M) {}\n"
     "fn main() -> int32 {\n  take(3);\n  return 0;\n}", "E0201"),
    ("literal_returned_as_enum", False, "enum M { Just(int64), Nothing }\n"
     "fn f() -> M {\n  return 1.5;\n}\nfn main() -> int32 { return 0; }", "E0201"),
    # uint8* converts to data pointers only: a closure stored from it crashed when called
    ("untyped_pointer_to_closure", False, "fn main() -> int32 {\n"
     "  var f: Fn(int32) -> int32 = new uint8;\n  return f(1);\n}", "E0201"),
    ("closure_to_untyped_pointer", False, "fn main() -> int32 {\n"
     "  var f: Fn(int32) -> int32 = fn(x: int32) -> int32 { return x; };\n"
     "  var p: uint8* = f;\n  return 0;\n}", "E0201"),
    # a tagged enum's {tag, payload} record is internal (m.tag read it)
    ("tagged_enum_field", False, "enum M { Just(int64), Nothing }\nfn main() -> int32 {\n"
     "  var m: M = Just(3);\n  return (int32)m.tag;\n}", "E0205"),
    ("address_of_generic", False, "fn id<T>(x: T) -> T { return x; }\nfn main() -> int32 {\n"
     "  var f: fn(int32) -> int32 = &id<int32>;\n  return 0;\n}", "E0002"),
    ("int_to_ptr", False, "fn main() -> int32 {\n  var a: int64 = 5;\n"
     "  var p: int32* = a;\n  return 0;\n}", "E0203"),
    ("missing_return", False, "fn f(a: int32) -> int32 {\n  if (a > 0) { return 1; }\n}\n"
     "fn main() -> int32 { return f(1); }", "E0011"),
    ("wrong_arg_count", False, "fn f(a: int32) -> int32 { return a; }\n"
     "fn main() -> int32 {\n  return f(1, 2);\n}", "E0108"),
    ("no_such_field", False, "struct P { x: int32; }\nfn main() -> int32 {\n"
     "  var p: P = { x: 1 };\n  return p.y;\n}", "E0205"),
    ("break_outside", False, "fn main() -> int32 {\n  break;\n  return 0;\n}", "E0010"),
    ("switch_enum_not_exhaustive", False, "enum C { R, G, B }\nfn f(c: C) -> int32 {\n"
     "  switch (c) { case R: return 1; case G: return 2; }\n  return 0;\n}\n"
     "fn main() -> int32 { return f(R); }", "E0015"),
    ("case_not_const", False, "fn main() -> int32 {\n  var a: int32 = 1;\n"
     "  switch (a) { case a: return 1; default: return 0; }\n}", "E0014"),
    ("assign_const", False, "const N = 4;\nfn main() -> int32 {\n  N = 5;\n  return 0;\n}",
     "E0106"),
    ("unknown_type", False, "fn main() -> int32 {\n  var x: Foo = 0;\n  return 0;\n}",
     "E0102"),
    ("kernel_returns", True, "kernel k(n: int32) -> int32 {\n  return n;\n}", "E0301"),
    ("kernel_struct_ptr", True, "struct S { a: int32; }\nkernel k(s: S*) {\n}", "E0302"),
    ("kernel_block_volume", True, "kernel(block = (64, 32, 1)) k(n: int32) {\n}", "E0303"),
    ("kernel_per_warp", True, "kernel(block = 48, per = warp) k(n: int32) {\n}", "E0304"),
    ("index_in_helper", True, "fn h() -> int32 {\n  return thread.x;\n}\n"
     "kernel k(p: int32*) {\n  p[0] = h();\n}", "E0310"),
    ("barrier_in_helper", True, "fn h() {\n  barrier();\n}\nkernel k(p: int32*) {\n"
     "  h();\n}", "E0310"),
    ("kernel_array_local", True, K + "  var a: int32[4];\n}", "E0311"),
    ("kernel_addr_local", True, K + "  var a: int32 = 1;\n  var q: int32* = &a;\n}",
     "E0311"),
    ("workgroup_init", True, K + "  workgroup var t: float32[4] = [1.0, 2.0, 3.0, 4.0];\n}",
     "E0312"),
    ("workgroup_rebind", True, K + "  workgroup var t: float32[4];\n  t = p;\n}", "E0312"),
    ("atomic_float_ptr", True, K + "  atomic_store(p, 0, 1.0);\n}", "E0320"),
    ("atomic_load_release", True, K + "  var v: uint32 = atomic_load(u, 0, order: release);"
     "\n}", "E0320"),
    ("atomic_wg_device_scope", True, K + "  workgroup var t: uint32[32];\n"
     "  atomic_store(t, 0, 1, scope: device);\n}", "E0320"),
    ("cas_failure_stronger", True, K + "  var o: uint32 = atomic_compare_exchange(u, 0, 1, 2,"
     " success_order: release, failure_order: acquire);\n}", "E0320"),
    ("async_bad_transaction", True, K + "  workgroup var t: float32[64];\n"
     "  async_copy_workgroup(t, p, 4, transaction: 12);\n}", "E0321"),
    ("async_wait_range", True, K + "  async_copy_wait(9);\n}", "E0321"),
    ("ballot_float_word", True, K + "  var m: uint32 = subgroup_ballot(n > 0, 1.5);\n}",
     "E0322"),
    ("tensor_transfer_missing_extent", True, K + "  tensor_transfer_workgroup(p, p, rank: 1, "
     "element: f32, direction: load);\n}", "E0324"),
    ("tensor_mma_missing_type", True, K + "  tensor_mma(p, p, p, p);\n}", "E0340"),
    ("dispatch_in_kernel", True, K + "  dispatch k[1, 1](p, u, n);\n}", "E0330"),
    ("dispatch_arg_count", False, "extern kernel(block = 256) vadd(a: float32*, n: int32);\n"
     "fn main() -> int32 {\n  dispatch vadd[1, 256](0);\n  return 0;\n}", "E0330"),
    ("dispatch_zero_grid", False, "fn main() -> int32 {\n  var h: int64 = 1;\n"
     "  dispatch h[0, 64]();\n  return 0;\n}", "E0330"),
    ("dispatch_block_mismatch", False, "extern kernel(block = 256) vadd(a: float32*, "
     "n: int32);\nfn main() -> int32 {\n  dispatch vadd[1, 128](0, 4);\n  return 0;\n}",
     "E0330"),
    ("dispatch_stream_twice", False, "fn main() -> int32 {\n  var h: int64 = 1;\n"
     "  dispatch h[grid: (1, 1, 1), block: (1, 1, 1), stream: 0]() on 0;\n  return 0;\n}",
     "E0330"),
]
