"""Language conformance of the GPU built-ins (issue 12, docs/reference/language_rules.md).

Accepted programs are compiled and assembled by ptxas for sm_90a, sm_121a and the portable
profile (compute_75, assembled as sm_75); those without a tensor op are also emitted as
SPIR-V and validated. Refused programs are checked for code, line:col and help text.
"""
from __future__ import annotations

import os
import tempfile

import pytest

from tests.support import spirv
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import device_program
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

TARGETS = (("sm_90a", "sm_90a"), ("sm_121a", "sm_121a"), ("portable", "sm_75"))


def compile_to(src: str, **opts) -> bytes:
    with tempfile.TemporaryDirectory(prefix="mettle-conf-") as tmp:
        path = os.path.join(tmp, "k.mettle")
        return compile_file(path, Options(**opts), source_text=src).data


def assemble_everywhere(ptxas, src: str) -> dict[str, str]:
    out = {}
    for arch, gpu in TARGETS:
        out[arch] = compile_to(src, emit="ptx", gpu_arch=arch).decode()
        ptxas(out[arch], gpu)
    return out


def refused(src: str, emit: str | None = None):
    with pytest.raises(CompileError) as info:
        if emit is None:
            module, _ = compile_to_ir("k.mettle", gpu=True, source_text=src)
            device_program(module)
        else:
            compile_to(src, emit="ptx", gpu_arch=emit)
    return info.value.diagnostics[0]


# ---------------------------------------------------------------- accepted: uniformity
# A warp-per-row kernel: the row is subgroup-uniform through `/ subgroup_size()`, and the
# early return keyed on it keeps the later reduction legal (LANGUAGE.md §12.8).
ROW_SUM = """kernel row_sum(x: float32*, out: float32*, rows: int32, cols: int32) {
  var row: int32 = (int32)(block.x * 4 + thread.x / (int32)subgroup_size());
  if (row >= rows) { return; }
  var lane: int32 = (int32)subgroup_local_id();
  var s: float32 = 0.0;
  var i: int32 = lane;
  while (i < cols) { s = s + x[row * cols + i]; i = i + (int32)subgroup_size(); }
  var t: float32 = subgroup_reduce_add(s);
  if (lane == 0) { out[row] = t; }
}
"""

# The same derivations through a multiple of the width, a shift and the `per = warp` block.
SPELLINGS = """kernel(block = 128) spell(x: uint32*, rows: uint32) {
  var a: uint32 = thread.x / (2 * subgroup_size());
  var b: uint32 = thread.x >> 5;
  var c: uint32 = block.x * 2 + a;
  if (c >= rows || b >= rows) { return; }
  x[c] = subgroup_broadcast(x[c], 0) + subgroup_reduce_max(b);
}
"""

WG_ADDRESS = """kernel staged(h: uint16*, f: float32*) {
  workgroup var stage_a: uint16[512];
  workgroup var stage_b: uint16[512];
  var base: uint32 = thread.x / 32 * 256;
  tensor_mma(&stage_a[0], &stage_b[256], f, f, shape: m16n16k16, input_type: f16,
             output_type: f32);
  tensor_mma(&stage_a[base], &stage_b[base], f, f, shape: m16n16k16, input_type: f16,
             output_type: f32);
}
"""


@pytest.mark.parametrize("src", [ROW_SUM, SPELLINGS], ids=["row-sum", "spellings"])
def test_subgroup_index_derivations_compile_everywhere(ptxas, src):
    ptx = assemble_everywhere(ptxas, src)
    assert all("shfl.sync" in text or "redux.sync" in text for text in ptx.values())
    spirv.validate(compile_to(src, emit="spirv"))


def test_workgroup_address_at_uniform_index_is_uniform(ptxas):
    ptx = assemble_everywhere(ptxas, WG_ADDRESS)
    assert ptx["sm_90a"].count("wmma.mma.sync") == 2


def test_private_address_stays_varying():
    src = ("kernel k(f: float32*) {\n  private var t: uint16[256];\n"
           "  tensor_mma(&t[0], &t[0], f, f, shape: m16n16k16, input_type: f16,\n"
           "             output_type: f32);\n}\n")
    d = refused(src)
    assert (d.code, d.span.line, d.span.col) == ("E0414", 3, 3)
    assert "operand `a` is varying" in d.message and d.help


# A declared block that breaks the proof's conditions, or a cast that can wrap thread.x
# negative, keeps the value varying.
@pytest.mark.parametrize("block,expr", [
    ("(48, 2, 1)", "thread.x / 32"),                     # rows of 48: warps straddle rows
    ("48", "thread.x / subgroup_size()"),                # a partial final subgroup
    ("256", "(uint32)((int32)(int8)thread.x / 32)"),     # wraps negative: -128/32, -127/32
])
def test_derivations_outside_the_proof_are_not_trusted(block, expr):
    src = (f"kernel(block = {block}) k(x: uint32*, rows: uint32) {{\n"
           f"  var r: uint32 = {expr};\n"
           "  if (r >= rows) { return; }\n"
           "  x[r] = subgroup_reduce_add(x[r]);\n}\n")
    d = refused(src)
    assert (d.code, d.span.line) == ("E0411", 4) and d.help


def test_barrier_after_subgroup_uniform_return_is_still_refused():
    src = ROW_SUM.replace("  var t: float32", "  barrier();\n  var t: float32")
    d = refused(src)
    assert (d.code, d.span.line, d.span.col) == ("E0410", 8, 3) and d.help


# ---------------------------------------------------------------- accepted: operands
U4_DEFAULTS = """kernel u4(a: uint8*, b: uint8*, c: int32*, d: int32*) {
  tensor_mma(a, b, c, d, shape: m8n8k32, input_type: u4, output_type: i32);
}
"""

LD64 = """kernel ld64(a: uint16*, b: uint16*, c: float32*, d: float32*, bias: float32*,
               m: uint32, n: uint32, k: uint32, lda: uint64, ldb: uint64, ldc: int64,
               ldbias: uint64) {
  tensor_matmul(a, b, c, d, block.y * 16, block.x * 16, m, n, k, shape: m16n16k16,
                input_type: f16, output_type: f32, lda: lda, ldb: ldb, ldc: ldc, ldd: 16);
  tensor_epilogue(d, shape: m16n16, element_type: f32, bias_mode: matrix, bias: bias,
                  ldbias: ldbias, alpha: 2.0);
}
"""


def test_u4_wmma_with_default_layouts(ptxas):
    ptx = assemble_everywhere(ptxas, U4_DEFAULTS)
    assert "wmma.mma.sync.aligned.row.col.m8n8k32.s32.u4.u4.s32" in ptx["sm_90a"]


def test_uint64_leading_dimensions_are_accepted_and_checked(ptxas):
    assemble_everywhere(ptxas, LD64)
    checked = compile_to(LD64, emit="ptx", gpu_arch="sm_90a", gpu_checks=True).decode()
    # one range check (setp.ls against 2^32-1, then trap) per 64-bit leading dimension
    assert checked.count("4294967295") == 4 and checked.count("trap") == 4
    plain = compile_to(LD64, emit="ptx", gpu_arch="sm_90a").decode()
    assert "trap" not in plain


@pytest.mark.parametrize("fmt,shape,native", [("f64", "m8n8k4", "wmma.mma.sync"),
                                              ("bf16", "m16n16k16", "wmma.mma.sync")])
def test_matmul_without_native_instruction_replays_exactly(ptxas, fmt, shape, native):
    carrier = {"f64": "float64", "bf16": "uint16"}[fmt]
    acc, acc_c = ("f64", "float64") if fmt == "f64" else ("f32", "float32")
    m = int(shape[1:].split("n")[0])
    src = (f"kernel mm(a: {carrier}*, b: {carrier}*, c: {acc_c}*, d: {acc_c}*, pm: uint32,\n"
           "           pn: uint32, pk: uint32) {\n"
           f"  tensor_matmul(a, b, c, d, block.y * {m}, block.x * {m}, pm, pn, pk,\n"
           f"                shape: {shape}, input_type: {fmt}, output_type: {acc},\n"
           "                lda: pk, ldb: pk, ldc: pn, ldd: pn);\n}\n")
    ptx = assemble_everywhere(ptxas, src)
    assert native in ptx["sm_90a"] and native not in ptx["portable"]
    assert "fma.rn" in ptx["portable"] and "activemask" in ptx["portable"]


def test_replay_needs_activemask_profile():
    src = ("kernel mm(a: float64*, c: float64*, pm: uint32) {\n"
           "  tensor_matmul(a, a, c, c, 0, 0, pm, pm, pm, shape: m8n8k4, input_type: f64,\n"
           "                output_type: f64, lda: pm, ldb: pm, ldc: pm, ldd: pm);\n}\n")
    d = refused(src, emit="sm_60")
    assert d.code == "E0504" and "replay" in d.message and d.span.line == 2 and d.help


# ---------------------------------------------------------------- refused programs
K = "kernel k(h: uint16*, f: float32*, u: uint8*, x: int32, n: uint32, g: float64) {\n"
MMA = "  tensor_mma(h, h, f, f, shape: m16n16k16, input_type: f16, output_type: f32"
SCALED = ("  tensor_mma(u, u, f, f, shape: m16n8k32, input_type: e4m3, output_type: f32,\n"
          "    a_scale: u, b_scale: u, a_scale_mode: block32, b_scale_mode: block32")
MATMUL = ("  tensor_matmul(u, u, f, f, 0, 0, n, n, n, shape: m16n8k32, input_type: e4m3,\n"
          "    output_type: f32, lda: n, ldb: n, ldc: n, ldd: n, a_scale: u, b_scale: u,\n"
          "    a_scale_mode: block32, b_scale_mode: block32, a_scale_type: ue8m0,\n"
          "    b_scale_type: ue8m0")
EPI = "  tensor_epilogue(f, shape: m16n16, element_type: f32"

# (name, body, code, marker, message fragment, help fragment): the diagnostic points at the
# first occurrence of `marker` in the body (the offending operand or option)
REFUSED = [
    ("reduce_int32", "  var s: int32 = (int32)subgroup_reduce_add(x);", "E0322", 'x);',
     "takes a uint32 or float32 value, found int32", "(uint32)value"),
    ("broadcast_f64", "  var s: float64 = subgroup_broadcast(g, 0);", "E0322", 'g, 0',
     "found float64", "(float32)value"),
    ("scan_uint8", "  var s: uint32 = subgroup_scan_inclusive_add(u[0]);", "E0322", 'u[0]',
     "found uint8", "(uint32)value"),
    ("shuffle_int32", "  var s: uint32 = subgroup_shuffle(x, 1);", "E0322", 'x, 1',
     "found int32", "(uint32)value"),
    ("any_int", "  var s: bool = subgroup_any(x);", "E0322", 'x);',
     "predicate of subgroup_any must be a bool, found int32", "!= 0"),
    ("all_literal", "  var s: bool = subgroup_all(1);", "E0322", '1);', "must be a bool",
     "!= 0"),
    ("ballot_float", "  var s: uint32 = subgroup_ballot(1.5, 0);", "E0322", '1.5',
     "predicate of subgroup_ballot must be a bool, found float64", "!= 0"),
    ("reduce_option", "  var s: uint32 = subgroup_reduce_max(n, order: relaxed);", "E0322",
     'order', "takes no named options, found `order:`", "scope is the subgroup"),
    ("packed_f16", MMA + ", a_packing: packed);", "E0340", 'a_packing',
     "`a_packing: packed` packs sub-byte values, but A is f16", "sub-byte packing"),
    ("subbyte_i8", "  tensor_mma(u, u, f, f, shape: m16n16k16, a_type: i8, b_type: u8,\n"
     "    output_type: f32, b_packing: dense_subbyte);", "E0340", 'b_packing',
     "B is u8 (8-bit elements)", "sub-byte packing"),
    ("scale_without_type", SCALED + ");", "E0340", 'a_scale_mode',
     "`a_scale_mode: block32` needs an `a_scale_type:`", "a_scale_type: ue8m0"),
    ("scale_without_table", "  tensor_mma(u, u, f, f, shape: m16n8k32, input_type: e4m3,\n"
     "    output_type: f32, b_scale_mode: block32, b_scale_type: ue8m0);", "E0340",
     'b_scale_mode', "needs an `b_scale:` pointer", "b_scale: table"),
    ("scale_ld_without_mode", MMA + ", ldsa: 4);", "E0340", 'ldsa', "`ldsa` needs",
     "block-scaled"),
    ("integer_rounding", "  tensor_mma(u, u, f, f, shape: m16n16k16, input_type: u8,\n"
     "    output_type: i32, rounding: toward_zero);", "E0340", 'rounding',
     "no meaning for integer", "rounding"),
    ("matmul_scale_lds", MATMUL + ");", "E0341", 'tensor_matmul', "explicit `ldsa:`",
     "ldsa: <stride>"),
    ("epilogue_alpha_int", EPI + ", alpha: x);", "E0342", 'x);',
     "`alpha:` must be a float32 (the f32 epilogue's element type), found int32",
     "(float32)value"),
    ("epilogue_beta_f64", EPI + ", bias_mode: row, bias: f, beta: g);", "E0342", 'g);',
     "`beta:` must be a float32", "(float32)value"),
    ("epilogue_clamp_f64", "  tensor_epilogue(h, shape: m16n16, element_type: f16,"
     " activation: clamp,\n    clamp_min: 0.0, clamp_max: g);", "E0342", 'g);',
     "`clamp_max:` must be a float32 (the f16 epilogue's", "(float32)value"),
    ("ld_float", MMA + ", lda: g);", "E0340", 'g);', "runtime `lda:` must be an integer",
     "(uint32)"),
]


@pytest.mark.parametrize("name,body,code,marker,fragment,hint", REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_refused_with_location_and_help(name, body, code, marker, fragment, hint):
    d = refused(K + body + "\n}\n")
    at = body.index(marker)
    line, col = 2 + body.count("\n", 0, at), at - body.rfind("\n", 0, at)
    assert (d.code, d.span.line, d.span.col) == (code, line, col), (d.code, d.span,
                                                                     d.message)
    assert fragment in d.message, d.message
    assert d.help and hint in d.help, d.help


def test_recursion_points_at_the_closing_call():
    src = ("fn f(x: int32) -> int32 {\n  if (x > 0) { return g(x - 1); }\n  return 0;\n}\n"
           "fn g(x: int32) -> int32 {\n  return f(x);\n}\n"
           "kernel k(p: int32*) { p[0] = f(3); }\n")
    d = refused(src)
    assert (d.code, d.span.line, d.span.col) == ("E0402", 6, 10)
    assert "f -> g -> f" in d.message and "loop" in d.help
