"""std/math against Python's math module: every float function over a spread of inputs,
within a few ulps (bit patterns printed by the program), plus the special cases the module
promises and its integer functions exactly. Built and run on every host target."""
from __future__ import annotations

import math
import struct

import pytest

from .cross import TARGETS, build_for, run_on, skip_unless_runnable

XS = [0.1, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 10.0, 123.456, 1e-5, 700.0, 1e8, -0.3, -2.5, -7.0]
UNIT = [-0.99, -0.5, -0.1, 0.0, 0.2, 0.7, 0.999]


def _round_half_away(x: float) -> float:
    return math.copysign(math.floor(abs(x) + 0.5), x)


# name -> (python reference, inputs, allowed ulps)
UNARY = {
    "sqrt": (math.sqrt, [x for x in XS if x >= 0] + [2.0 ** -1070], 0),
    "exp": (math.exp, [x for x in XS if x < 700.5] + [-700.0, 0.0], 1),
    "log": (math.log, [x for x in XS if x > 0] + [1e-300, 1e300], 1),
    "log2": (math.log2, [x for x in XS if x > 0], 2),
    "log10": (math.log10, [x for x in XS if x > 0], 2),
    "sin": (math.sin, XS + [0.0, 1e6], 1),
    "cos": (math.cos, XS + [0.0, 1e6], 1),
    "tan": (math.tan, [x for x in XS if abs(x) < 1e6], 2),
    "atan": (math.atan, XS + [1e30, -1e30], 1),
    "asin": (math.asin, UNIT, 2),
    "acos": (math.acos, UNIT, 2),
    "sinh": (math.sinh, [x for x in XS if abs(x) < 700], 2),
    "cosh": (math.cosh, [x for x in XS if abs(x) < 700], 2),
    "tanh": (math.tanh, XS, 2),
    "asinh": (math.asinh, XS, 2),
    "acosh": (math.acosh, [x for x in XS if x >= 1], 2),
    "atanh": (math.atanh, UNIT[1:], 2),
    "expm1": (math.expm1, [x for x in XS if x < 700.5] + [1e-12, -1e-9], 2),
    "log1p": (math.log1p, [x for x in XS if x > -1] + [1e-12, -1e-9], 2),
    "cbrt": (math.cbrt, XS + [-27.0], 2),
    "floor": (math.floor, XS, 0), "ceil": (math.ceil, XS, 0), "trunc": (math.trunc, XS, 0),
    "round": (_round_half_away, XS + [2.5, -0.5], 0),
    "fabs": (math.fabs, XS, 0),
}
BINARY = {
    "atan2": (math.atan2, [(1.0, 2.0), (-1.0, -2.0), (3.0, -0.5), (0.0, -1.0)], 1),
    "hypot": (math.hypot, [(3.0, 4.0), (1e300, 1e300), (-2.0, 0.1)], 1),
    "fmod": (math.fmod, [(7.5, 2.0), (-7.5, 2.0), (1e10, 3.3), (5.0, 10.0)], 0),
    "pow": (math.pow, [(2.0, 10.0), (2.0, 0.5), (-2.0, 3.0), (10.0, -2.0), (1.5, 2.7)], 2),
    "copysign": (math.copysign, [(3.0, -0.0), (-2.0, 1.0)], 0),
}


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _ulps(a: int, b: int) -> int:
    ua = a if a >= 0 else -(a & 0x7FFFFFFFFFFFFFFF)
    ub = b if b >= 0 else -(b & 0x7FFFFFFFFFFFFFFF)
    return abs(ua - ub)


def _cases():
    for name, (ref, xs, ulps) in UNARY.items():
        for x in xs:
            yield f"{name}({x!r})", float(ref(x)), ulps
    for name, (ref, xys, ulps) in BINARY.items():
        for x, y in xys:
            yield f"{name}({x!r}, {y!r})", float(ref(x, y)), ulps


CASES = list(_cases())
INTEGER_CHECKS = [
    ("abs(-5)", 5), ("labs(-9223372036854775807)", 9223372036854775807), ("min(3, -4)", -4),
    ("max(3, -4)", 3), ("clamp(12, 0, 10)", 10), ("isign(-8)", -1), ("ipow(3, 13)", 3 ** 13),
    ("ipow(2, -1)", 0), ("isqrt(99)", 9), ("isqrt(1000000000000)", 1000000), ("gcd(-12, 18)", 6),
    ("lcm(4, 6)", 12), ("is_pow2(64)", 1), ("is_pow2(0)", 0), ("next_pow2(65)", 128),
    ("ilog2(1025)", 10), ("ilog2(0)", -1), ("idiv_floor(-7, 2)", -4), ("imod_floor(-7, 2)", 1),
    ("idiv_floor(7, 0)", 0), ("is_nan(NAN())", 1), ("is_inf(-INF())", 1),
    ("is_finite(INF())", 0), ("signbit(-0.0)", 1), ("f64_raw_exponent(1.0)", 1023),
    ("approx_eq(1.0, 1.0000001, 0.000001)", 1), ("approx_zero(0.01, 0.001)", 0),
    ("is_nan(sqrt(-1.0)) + is_nan(log(-1.0)) + is_nan(asin(2.0)) + is_nan(pow(-2.0, 0.5))", 4),
    ("is_inf(exp(1000.0)) + is_inf(log(0.0)) + is_inf(pow(0.0, -1.0))", 3),
    ("(int64)(pow(NAN(), 0.0) + exp(-1000.0) + trunc(-0.3) + fsign(NAN()))", 1),
    ("(int64)(ldexp(1.0, 1023) / ldexp(1.0, 1020))", 8),
    ("(int64)(degrees(PI()) + wrap(370.0, 0.0, 360.0) + lerp(0.0, 10.0, 0.5))", 195),
    ("(int64)(smoothstep(0.0, 1.0, 0.5) * 1000.0 + remap(5.0, 0.0, 10.0, 0.0, 100.0))", 550),
    ("(int64)f32_sqrt((float32)16.0) + (int64)f32_clamp((float32)5.0, (float32)0.0, (float32)2.0)",
     6),
]


def _program() -> str:
    lines = ['import "std/io"', 'import "std/math"', "fn main() -> int32 {",
             "    var e: int32 = 0;",
             "    var m: float64 = frexp(48.0, &e);",
             "    println_int((int64)(m * 1000.0) + (int64)e * 100000);"]
    lines += [f"    println_int(f64_bits({expr}));" for expr, _, _ in CASES]
    lines += [f"    println_int((int64)({expr}));" for expr, _ in INTEGER_CHECKS]
    return "\n".join(lines + ["    return 0;", "}", ""])


@pytest.mark.parametrize("opt", ["-O0", "-O"])
@pytest.mark.parametrize("target", TARGETS)
def test_std_math(tmp_path, target, opt):
    skip_unless_runnable(target)
    exe = build_for(tmp_path, _program(), target, "math", extra=() if opt == "-O0" else ("-O",))
    r = run_on(target, exe)
    assert r.returncode == 0, r.stderr
    out = [int(v) for v in r.stdout.split()]
    assert out[0] == 750 + 6 * 100000                      # frexp(48) = 0.75 * 2^6
    bad = []
    for (expr, want, ulps), got in zip(CASES, out[1:1 + len(CASES)]):
        if _ulps(got, _bits(want)) > ulps:
            bad.append(f"{expr}: {struct.unpack('<d', struct.pack('<q', got))[0]!r} "
                       f"!= {want!r}")
    assert bad == []
    assert out[1 + len(CASES):] == [v for _, v in INTEGER_CHECKS]
