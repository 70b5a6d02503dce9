"""Fuzz the frontend seam: mutated valid programs must parse or raise a located CompileError.

Drives `toolchain.compiler.frontend.parse_source`, so the whole pipeline can later be fuzzed
through the same entry. Mutations: byte flips, token deletion/duplication/swap, truncation
and random token insertion. Any exception other than CompileError fails the test.
"""
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend import parse_source

SEEDS = [
    """import "std/io";
const N = 64
struct Cell { v: int32; w: float32 }
enum Mode { A, B = 5, C }
extern fn c_abs(v: int32) -> int32 = "abs";
@inline export fn sq(x: int32) -> int32 { return x * x; }
fn main() -> int32 {
  var x: int32 = 0
  var t: int32[3] = [1, 2, 3]
  scan: for r in 0..N { for c: int64 in 0..=3 { if (c == 2) { continue scan; } } }
  for (var j: int32 = 0; j < N; j += 1) { x += (int32)t[j % 3] << 1; }
  switch (x) { case 1: x = 2; break; case 3..9: x = 'A'; default: x = 0 }
  while (x > 0 && !(x == 3)) { x = x - 1 }
  var p: Cell* = (Cell*)0; p->v = sizeof(Cell); /* nested /* comment */ */
  return x
}
""",
    """kernel(block = (64, 4, 1), per = warp) k(a: float32*, out: float32*, n: int32) {
  workgroup var tile: float32[256];
  private var s: int32[4]
  workgroup var arena: uint32*;
  var i: int32 = block.x * block_dim.x + thread.x
  if (i < n) { tile[thread.x] = a[i]; } else if (i > 9) { } else { s[0] = 1 }
  barrier(workgroup, global, acq_rel);
  var old: uint32 = atomic_fetch_add(arena, i, 1, order: acq_rel, scope: workgroup);
  tensor_mma(a, a, out, out, shape: m16n16k16, input_type: f16, rounding: default);
  out[i] = tile[thread.x] * 2.0 + (float32)old;
}
extern kernel(block = 256) vadd(a: float32*, n: int32);
fn host(h: int64, n: int32, s: int64) {
  dispatch vadd[(n + 255) / 256, 256](h, n);
  dispatch k[grid: (n, 1, 1), block: (64, 4, 1), shared: 1024](h, h, n) on s
}
""",
]

TOKEN_RE = re.compile(r"\s+|[A-Za-z_]\w*|\d+(?:\.\d+)?|\"[^\"\n]*\"|'[^'\n]*'|\S")
TOKENS = TOKEN_RE.findall(SEEDS[0] + SEEDS[1])
EXTRA = ["(", ")", "{", "}", "[", "]", ";", ",", "\n", "..", "..=", "=", "==", "->", "/*",
         "*/", '"', "'", "@", "kernel", "dispatch", "barrier", "case", "else", "(int32)",
         "0x", "1e", "\\", "\ufeff", "é", "\0", "match", "fn", "<int32>", "workgroup"]

SETTINGS = settings(max_examples=600, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


def check(src: str) -> None:
    try:
        parse_source(src, "fuzz.mettle")
    except CompileError as e:
        assert e.diagnostics, "CompileError without diagnostics"
        for d in e.diagnostics:
            assert d.span is not None and d.span.line >= 1 and d.span.col >= 1, d
            assert d.code.startswith("E") and d.message


def test_seeds_are_valid_programs():
    for seed in SEEDS:
        parse_source(seed, "seed.mettle")


@SETTINGS
@given(st.sampled_from(SEEDS), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)),
                                        min_size=1, max_size=8))
def test_byte_flips(seed, flips):
    data = bytearray(seed.encode())
    for where, byte in flips:
        data[int(where * (len(data) - 1))] = byte
    check(data.decode("utf-8", "replace"))


@SETTINGS
@given(st.sampled_from(SEEDS), st.data())
def test_token_mutations(seed, data):
    toks = TOKEN_RE.findall(seed)
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["delete", "dup", "swap", "insert", "random"]))
        i = data.draw(st.integers(0, len(toks) - 1))
        j = data.draw(st.integers(0, len(toks) - 1))
        if op == "delete":
            del toks[i]
        elif op == "dup":
            toks.insert(i, toks[i])
        elif op == "swap":
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "insert":
            toks.insert(i, data.draw(st.sampled_from(EXTRA)))
        else:
            toks.insert(i, data.draw(st.sampled_from(TOKENS)))
        if not toks:
            toks = ["x"]
    check("".join(toks))


@SETTINGS
@given(st.sampled_from(SEEDS), st.floats(0, 1))
def test_truncation(seed, where):
    check(seed[:int(where * len(seed))])


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(TOKENS + EXTRA), max_size=60))
def test_random_token_soup(toks):
    check(" ".join(toks))


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.text(max_size=200))
def test_random_text(text):
    check(text)
