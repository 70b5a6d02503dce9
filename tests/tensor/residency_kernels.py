"""Mettle sources of the tensor-residency tests: K loops (for and while spellings) and a
straight-line chain, all D = C + A*B over f16 A (row-major MxK), B (row-major KxN), f32 C/D.

One subgroup per 16x16 tile of D; the workgroup holds 4 subgroups (block = 128)."""

HEAD = """kernel(block = 128) {name}(a: uint16*, b: uint16*, c: float32*, m: int32, n: int32,
                           k: int32) {{
  var tile: int32 = (int32)(block.x * 4 + thread.x / 32);
  var tiles_n: int32 = n / 16;
  if (tile >= (m / 16) * tiles_n) {{ return; }}
  var tm: int32 = tile / tiles_n;
  var tn: int32 = tile % tiles_n;
  var acc: float32* = c + (int64)(tm * 16) * (int64)n + (int64)(tn * 16);
  var ar: uint16* = a + (int64)(tm * 16) * (int64)k;
"""
MMA = """tensor_mma(ar + (int64)({kk} * 16), b + (int64)({kk} * 16) * (int64)n + (int64)(tn * 16),
               acc, acc, shape: m16n16k16,
               a_type: f16, b_type: f16, accumulator_type: f32, result_type: f32,
               a_layout: row, b_layout: row, c_layout: row, d_layout: row,
               lda: (uint32)k, ldb: (uint32)n, ldc: (uint32)n, ldd: (uint32)n);"""

FOR_LOOP = HEAD.format(name="kloop_for") + f"""  for kk in 0..k / 16 {{
    {MMA.format(kk="kk")}
  }}
}}
"""

WHILE_LOOP = HEAD.format(name="kloop_while") + f"""  var kk: int32 = 0;
  while (kk < k / 16) {{
    {MMA.format(kk="kk")}
    kk = kk + 1;
  }}
}}
"""

# a loop whose body also stores: residency must be refused (D would be observable)
STORING_LOOP = HEAD.format(name="kloop_store") + f"""  for kk in 0..k / 16 {{
    {MMA.format(kk="kk")}
    c[0] = 1.0;
  }}
}}
"""

# three connected MMAs in one block (K = 48 exactly): a chain
CHAIN = HEAD.format(name="chain3") + "\n".join(
    f"  {MMA.format(kk=str(i))}" for i in range(3)) + "\n}\n"

ALL = FOR_LOOP + WHILE_LOOP + CHAIN


def pipeline(stages: int) -> str:
    """An explicit N-stage schedule for one subgroup (block = 32): every stage's A and B
    16x16 tiles (stored contiguously, tile s at element 256*s) are copied into workgroup
    memory up front, one commit group per stage; then stage s waits for its group
    (pending = N-1-s), publishes it with an acq_rel barrier and multiplies into C."""
    lines = [f"kernel(block = 32) pipe{stages}(a: uint16*, b: uint16*, c: float32*) {{",
             f"  workgroup var sa: uint16[{256 * stages}];",
             f"  workgroup var sb: uint16[{256 * stages}];",
             "  var t: int32 = (int32)thread.x;"]
    for s in range(stages):
        for m in "ab":
            lines.append(f"  async_copy_workgroup(&s{m}[{256 * s} + t * 8], "
                         f"&{m}[{256 * s} + t * 8], 8, transaction: 16);")
        lines.append("  async_copy_commit();")
    for s in range(stages):
        lines += [f"  async_copy_wait({stages - 1 - s});",
                  "  barrier(workgroup, acq_rel);",
                  f"  tensor_mma(&sa[{256 * s}], &sb[{256 * s}], c, c, shape: m16n16k16,",
                  "             a_type: f16, b_type: f16, accumulator_type: f32, "
                  "result_type: f32,",
                  "             b_layout: row);"]
    return "\n".join(lines) + "\n}\n"


def with_epilogue(options: str, name: str = "gemm_ep", extra_params: str = "") -> str:
    """The for-form K loop followed by `tensor_epilogue(acc, ...options)` on the same tile."""
    src = FOR_LOOP.replace("kloop_for(", f"{name}(").replace(
        "k: int32) {", f"k: int32{extra_params}) {{")
    body, close = src.rsplit("}", 1)
    return body + (f"  tensor_epilogue(acc, m: 16, n: 16, element_type: f32, ldd: (uint32)n,\n"
                   f"                  {options});\n}}" + close)


EPILOGUES = {
    "relu_alpha": ("alpha: alpha, activation: relu", ", alpha: float32"),
    "clamp": ("activation: clamp, clamp_min: lo, clamp_max: hi", ", lo: float32, hi: float32"),
    "bias": ("bias: bias, bias_mode: column", ", bias: float32*"),
}
