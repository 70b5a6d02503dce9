"""Conversions in compiled host programs: int<->int, int<->float (unsigned 64-bit included),
float<->float, bool, and implicit int->float (LANGUAGE.md §12.1), against Python oracles."""
from __future__ import annotations

import struct

from .support import build, run
from .test_arith import PRINTF, tname, wrap

INTS = [(b, s) for s in (True, False) for b in (8, 16, 32, 64)]
VALUES = [0, 1, -1, 127, 128, -129, 255, 65535, -32769, 2147483647, -2147483648,
          4294967295, 9223372036854775807, -9223372036854775808, 123456789012345]


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def int_casts() -> tuple[str, list[int]]:
    """Every source value narrowed into every type, then widened back for printing."""
    lines, exp = [], []
    for v in VALUES:
        lines.append(f"    x = {v};" if v >= 0 else f"    x = 0 - {-v};")
        for bits, signed in INTS:
            t = tname(bits, signed)
            pr, wide = ("printf_i", "int64") if signed else ("printf_u", "uint64")
            fmt = "%lld" if signed else "%llu"
            lines.append(f"    {pr}(\"{fmt}\\n\", ({wide})(({t})x));")
            exp.append(wrap(v, bits, signed))
    return "    var x: int64 = 0;\n" + "\n".join(lines), exp


def test_integer_narrowing_and_widening(tmp_path):
    body, exp = int_casts()
    src = PRINTF + "fn main() -> int32 {\n" + body + "\n    return 0;\n}\n"
    out = run(build(tmp_path, src))
    assert out.returncode == 0, out.stderr
    assert [int(x) for x in out.stdout.split()] == exp


FLOAT_SRC = PRINTF + """
fn from_u64(u: uint64) -> float64 { return (float64)u; }
fn from_u64f(u: uint64) -> float32 { return (float32)u; }
fn to_u64(d: float64) -> uint64 { return (uint64)d; }
fn to_i32(d: float64) -> int32 { return (int32)d; }
fn to_u8(f: float32) -> uint8 { return (uint8)f; }
fn to_i64f(f: float32) -> int64 { return (int64)f; }
fn narrow(d: float64) -> float32 { return (float32)d; }
fn widen(f: float32) -> float64 { return f; }
fn implicit(i: int32) -> float64 { var f: float64 = i; return f; }
fn implicit32(i: int64) -> float32 { var f: float32 = i; return f; }
fn truth(d: float64) -> int32 { if (d) { return 1; } return 0; }
fn itruth(v: int64) -> int32 { var b: bool = (bool)v; if (b) { return 1; } return 0; }
fn main() -> int32 {
    printf_f("%.17g\\n", from_u64(18446744073709551615));
    printf_f("%.17g\\n", from_u64(9223372036854775809));
    printf_f("%.17g\\n", from_u64(12345));
    printf_f("%.17g\\n", (float64)from_u64f(18446744073709551615));
    printf_u("%llu\\n", to_u64(18446744073709549568.0));
    printf_u("%llu\\n", to_u64(9223372036854775808.0));
    printf_u("%llu\\n", to_u64(42.9));
    printf_i("%lld\\n", (int64)to_i32(-7.9));
    printf_i("%lld\\n", (int64)to_i32(2147483647.0));
    printf_u("%llu\\n", (uint64)to_u8(200.5));
    printf_i("%lld\\n", to_i64f(-16777216.0));
    printf_f("%.17g\\n", (float64)narrow(0.1));
    printf_f("%.17g\\n", widen(narrow(1.0e10)));
    printf_f("%.17g\\n", implicit(-3));
    printf_f("%.17g\\n", (float64)implicit32(16777217));
    printf_i("%lld\\n", (int64)truth(0.0));
    printf_i("%lld\\n", (int64)truth(-0.5));
    var zero: float64 = 0.0;
    printf_i("%lld\\n", (int64)truth(zero / zero));
    printf_i("%lld\\n", (int64)itruth(256));
    printf_i("%lld\\n", (int64)itruth(0));
    return 0;
}
"""


def test_float_conversions(tmp_path):
    out = run(build(tmp_path, FLOAT_SRC))
    assert out.returncode == 0, out.stderr
    g = lambda x: "%.17g" % x  # noqa: E731
    exp = [g(float(2**64 - 1)), g(float(2**63 + 1)), g(12345.0), g(f32(float(2**64 - 1))),
           str(int(18446744073709549568.0)), str(2**63), "42", "-7", "2147483647", "200",
           "-16777216", g(f32(0.1)), g(f32(1.0e10)), g(-3.0), g(f32(16777217.0)),
           "0", "1", "1", "1", "0"]
    assert out.stdout.split() == exp
