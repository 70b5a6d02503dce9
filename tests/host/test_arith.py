"""Integer and float arithmetic of compiled host programs against Python oracles.

One generated program per test: a function per type computes every operator on runtime
parameters (so nothing is folded) and prints the results with printf (a varargs call:
`al` must hold the number of vector registers). Python computes the expected text.
"""
from __future__ import annotations

import math
import struct

from .support import build, run

PRINTF = """
extern fn printf_i(fmt: cstring, v: int64) -> int32 = "printf";
extern fn printf_u(fmt: cstring, v: uint64) -> int32 = "printf";
extern fn printf_f(fmt: cstring, v: float64) -> int32 = "printf";
"""

INT_TYPES = [(8, True), (16, True), (32, True), (64, True),
             (8, False), (16, False), (32, False), (64, False)]


def tname(bits: int, signed: bool) -> str:
    return f"{'int' if signed else 'uint'}{bits}"


def wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def samples(bits: int, signed: bool) -> list[tuple[int, int]]:
    top = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    low = -(1 << (bits - 1)) if signed else 0
    pairs = [(7, 3), (top, 2), (top - 5, top), (100 % (top + 1), 7), (1, bits - 1)]
    if signed:
        pairs += [(-7, 3), (7, -3), (-7, -3), (low, 1), (low + 1, -1), (-1, 5)]
    else:
        pairs += [(0, 1), (top, top - 1), (low + 3, 9)]
    return pairs


def int_oracle(a: int, b: int, bits: int, signed: bool) -> list[int]:
    w = lambda v: wrap(v, bits, signed)  # noqa: E731
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    r = a - q * b
    sh = b & (bits - 1)
    shr = (a >> sh) if signed else ((a & ((1 << bits) - 1)) >> sh)
    return [w(a + b), w(a - b), w(a * b), w(q), w(r), w(a & b), w(a | b), w(a ^ b),
            w(a << sh), w(shr), w(-a), w(~a), int(a < b), int(a <= b), int(a > b),
            int(a >= b), int(a == b), int(a != b), min(a, b), max(a, b)]


def int_function(bits: int, signed: bool) -> str:
    t = tname(bits, signed)
    pr = "printf_i" if signed else "printf_u"
    fmt = "%lld" if signed else "%llu"
    wide = "int64" if signed else "uint64"
    exprs = ["a + b", "a - b", "a * b", "a / b", "a % b", "a & b", "a | b", "a ^ b",
             "a << s", "a >> s", "-a", "~a"]
    body = [f"    var s: {t} = b & {bits - 1};"]
    body += [f"    var r{i}: {t} = {e};\n    {pr}(\"{fmt}\\n\", ({wide})r{i});"
             for i, e in enumerate(exprs)]
    body += [f"    printf_i(\"%lld\\n\", (int64)(a {op} b));"
             for op in ("<", "<=", ">", ">=", "==", "!=")]
    for name, rel in (("lo", "<"), ("hi", ">")):
        body += [f"    var {name}: {t} = a;", f"    if (b {rel} a) {{ {name} = b; }}",
                 f"    {pr}(\"{fmt}\\n\", ({wide}){name});"]
    return f"fn ops_{t}(a: {t}, b: {t}) {{\n" + "\n".join(body) + "\n}\n"


def test_integer_operators_every_width(tmp_path):
    src, calls, expected = [PRINTF], [], []
    for bits, signed in INT_TYPES:
        src.append(int_function(bits, signed))
        for a, b in samples(bits, signed):
            calls.append(f"    ops_{tname(bits, signed)}({a}, {b});")
            expected += int_oracle(a, b, bits, signed)
    src.append("fn main() -> int32 {\n" + "\n".join(calls) + "\n    return 0;\n}\n")
    out = run(build(tmp_path, "\n".join(src)))
    assert out.returncode == 0, out.stderr
    got = [int(x) for x in out.stdout.split()]
    assert got == expected


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def g17(x: float) -> str:
    return "%.17g" % x


FLOAT_SRC = PRINTF + """
fn fops64(a: float64, b: float64) {
    printf_f("%.17g\\n", a + b); printf_f("%.17g\\n", a - b);
    printf_f("%.17g\\n", a * b); printf_f("%.17g\\n", a / b); printf_f("%.17g\\n", -a);
    printf_i("%lld\\n", (int64)(a < b)); printf_i("%lld\\n", (int64)(a <= b));
    printf_i("%lld\\n", (int64)(a > b)); printf_i("%lld\\n", (int64)(a >= b));
    printf_i("%lld\\n", (int64)(a == b)); printf_i("%lld\\n", (int64)(a != b));
}
fn fops32(a: float32, b: float32) {
    var s: float32 = a + b; var d: float32 = a - b; var m: float32 = a * b;
    var q: float32 = a / b; var n: float32 = -a;
    printf_f("%.17g\\n", s); printf_f("%.17g\\n", d); printf_f("%.17g\\n", m);
    printf_f("%.17g\\n", q); printf_f("%.17g\\n", n);
    printf_i("%lld\\n", (int64)(a < b)); printf_i("%lld\\n", (int64)(a <= b));
    printf_i("%lld\\n", (int64)(a > b)); printf_i("%lld\\n", (int64)(a >= b));
    printf_i("%lld\\n", (int64)(a == b)); printf_i("%lld\\n", (int64)(a != b));
}
fn main() -> int32 {
    var zero: float64 = 0.0;
    var nan: float64 = zero / zero;
    fops64(1.5, 2.25); fops64(-3.0, 7.0); fops64(0.1, 0.2); fops64(nan, 1.0);
    fops64(2.0, 2.0); fops64(1e300, 1e-300);
    fops32(1.5, 2.25); fops32(0.1, 0.2); fops32((float32)nan, 1.0); fops32(3.0, 3.0);
    fops32(16777216.0, 1.0);
    return 0;
}
"""


def float_oracle(a: float, b: float, rnd) -> list[str]:
    nan = math.isnan(a) or math.isnan(b)
    div = a / b if b else math.copysign(math.inf, a)
    vals = [g17(rnd(a + b)), g17(rnd(a - b)), g17(rnd(a * b)), g17(rnd(div)), g17(-a)]
    rel = [a < b, a <= b, a > b, a >= b, a == b, a != b]
    if nan:
        rel = [False] * 5 + [True]
    return vals + [str(int(x)) for x in rel]


def test_float_operators_and_nan_compares(tmp_path):
    out = run(build(tmp_path, FLOAT_SRC))
    assert out.returncode == 0, out.stderr
    nan = math.nan
    exp = []
    for a, b in [(1.5, 2.25), (-3.0, 7.0), (0.1, 0.2), (nan, 1.0), (2.0, 2.0),
                 (1e300, 1e-300)]:
        exp += float_oracle(a, b, lambda x: x)
    for a, b in [(1.5, 2.25), (0.1, 0.2), (nan, 1.0), (3.0, 3.0), (16777216.0, 1.0)]:
        exp += float_oracle(f32(a), f32(b), f32)
    got = out.stdout.split()
    assert [g.lower().lstrip("-") if "nan" in g else g for g in got] == \
        [e.lstrip("-") if "nan" in e else e for e in exp]
