"""Host-language rules of issue 17, each checked by building and RUNNING a program, at -O0
and -O: literal typing (§12.9), local `const` (§3), integer promotion on every narrow type
(§12.10), zero-initialized local arrays and structs, pointer difference in bytes (§4) and
float32-adopting float literals (§12.9). The user-facing account is docs/reference/host_semantics.md.
"""
from __future__ import annotations

import struct

import pytest

from .support import build, run

OPT_LEVELS = [(), ("-O",)]


def _run(tmp_path, src: str, opt) -> list[str]:
    out = run(build(tmp_path, src, extra=opt))
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_literals_above_int32_do_not_wrap(tmp_path, opt):
    src = """import "std/io";
fn main() -> int32 {
    print_int((int64)4294967295); newline();
    print_int((int64)3000000000); newline();
    print_int((int64)2147483648); newline();
    var x: int32 = 2147483647;
    print_int(x + 3000000000); newline();        // int64 literal: int64 sum
    var u: uint32 = 4000000000;
    print_int((int64)(u + 1)); newline();         // int32 literal beside uint32: uint32
    print_int((int64)(u == -96 - 4000000000 + 4000000000)); newline();
    var big: uint64 = 18446744073709551615;
    print_int((int64)(big >> 60)); newline();
    print_int(9223372036854775807); newline();
    print_int(BIG); newline();                   // a top-level untyped const
    print_int(G + BIG / 3); newline();
    return 0;
}
const BIG = 3000000000;
var G: int64 = 4294967295;
"""
    assert _run(tmp_path, src, opt) == ["4294967295", "3000000000", "2147483648",
                                        str(2147483647 + 3000000000), "4000000001", "0",
                                        "15", "9223372036854775807", "3000000000",
                                        str(4294967295 + 1000000000)]


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_local_const(tmp_path, opt):
    src = """import "std/io";
fn sq(x: int32) -> int32 { return x * x; }
fn main() -> int32 {
    const L: int32 = 5;
    const F: float64 = 2.5;
    const C: int64 = sq(7) + 1;          // any initializer: a read-only local
    const N: uint8 = 300;                // folded, wrapped to its type
    var a: int32[4] = [1, 2, 3, 4];
    print_int(L * a[3]); newline();
    print_int((int64)(F * 4.0)); newline();
    print_int(C); newline();
    print_int(N); newline();
    switch (C) { case 50: print_int(1); break; default: print_int(0); }
    newline();
    if (L > 4) { const L: int32 = 9; print_int(L); newline(); }   // shadowing
    print_int(L); newline();
    return 0;
}
"""
    assert _run(tmp_path, src, opt) == ["20", "10", "50", "44", "1", "9", "5"]


def test_local_const_is_read_only_and_typed(tmp_path):
    from .support import REPO, compile_cmd
    import subprocess
    for body, code in (("const L: int32 = 5;\n    L = 4;", "E0106"),
                       ("const L = 5;", "E0003")):
        src = tmp_path / "bad.mettle"
        src.write_text("fn main() -> int32 {\n    " + body + "\n    return 0;\n}\n")
        r = subprocess.run(compile_cmd("--build", str(src), "-o", str(tmp_path / "bad")),
                           cwd=REPO, capture_output=True, text=True)
        assert r.returncode != 0 and f"error[{code}]" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and not (tmp_path / "bad").exists()


NARROW = [("int8", 8, True), ("uint8", 8, False), ("int16", 16, True), ("uint16", 16, False)]
BIN_OPS = ["+", "-", "*", "/", "%", "&", "|", "^"]
CMP_OPS = ["<", "<=", ">", ">=", "==", "!="]


def _c_op(op: str, a: int, b: int) -> int:
    """C on int32-promoted operands (the values fit, so only the result may wrap)."""
    if op in ("/", "%"):
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return _wrap(q if op == "/" else a - q * b, 32, True)
    if op in CMP_OPS:
        return int(eval(f"a {op} b"))
    return _wrap(eval(f"a {op} b"), 32, True)


def _narrow_samples(bits: int, signed: bool):
    top = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    low = -(1 << (bits - 1)) if signed else 0
    pairs = [(top, top), (top, 1), (7, 3), (top - 1, 2), (low + 1, 3)]
    if signed:
        pairs += [(low, -1), (-7, 2), (low, low), (-1, top)]
    return pairs


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_integer_promotion_every_narrow_type(tmp_path, opt):
    """`a op b` on two narrow values is an int32 result, printed without narrowing;
    shifts promote the left operand; storing back narrows (wraps)."""
    src = ['import "std/io";', "fn p(v: int64) { print_int(v); newline(); }"]
    calls, want = [], []
    for t, bits, signed in NARROW:
        body = [f"    p(a {op} b);" for op in BIN_OPS + CMP_OPS]
        body += ["    p(a << 9);", "    p(a >> 3);", f"    p(-a);", f"    p(~a);",
                 f"    var s: {t} = a + b;", "    p(s);",
                 f"    var m: {t} = a * b;", "    p(m);",
                 "    p((a + b) >> 1);",                      # no narrow overflow inside
                 "    p(a == -1);"]                           # -1 is not 255 after promotion
        src.append(f"fn ops_{t}(a: {t}, b: {t}) {{\n" + "\n".join(body) + "\n}")
        for a, b in _narrow_samples(bits, signed):
            calls.append(f"    ops_{t}({a}, {b});")
            want += [_c_op(op, a, b) for op in BIN_OPS + CMP_OPS]
            want += [_wrap(a << 9, 32, True), a >> 3, -a, ~a,
                     _wrap(a + b, bits, signed), _wrap(a * b, bits, signed),
                     (a + b) >> 1, int(a == -1)]
    # mixed narrow types: both sides promote to int32 (C), not "unsigned wins"
    src.append("""fn mixed(x: int8, y: uint8, z: uint16, w: int16) {
    p(x < y); p(x + y); p(z * z); p(w - z); p(y << 24); p(x * y * z);
}""")
    calls.append("    mixed(-1, 255, 65535, -32768);")
    want += [1, 254, 65535 * 65535 - (1 << 32), -32768 - 65535, _wrap(255 << 24, 32, True),
             _wrap(-1 * 255 * 65535, 32, True)]
    src.append("fn main() -> int32 {\n" + "\n".join(calls) + "\n    return 0;\n}\n")
    got = [int(x) for x in _run(tmp_path, "\n".join(src), opt)]
    assert got == want


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_uninitialized_locals_are_zero(tmp_path, opt):
    """Local arrays and structs declared without an initializer start zeroed (a fresh
    call frame full of garbage must not leak through)."""
    src = """import "std/io";
struct In { a: int8; b: int64; }
struct P { x: int32; y: float64; inner: In; arr: int16[3]; }
fn scribble(seed: int64) -> int64 {
    var junk: int64[64];
    for i in 0..64 { junk[i] = seed * (i + 1) - 77; }
    return junk[7];
}
fn fresh() -> int64 {
    var a: int32[16];
    var p: P;
    var t: int64 = 0;
    for i in 0..16 { t = t + a[i]; }
    t = t + p.x + (int64)p.y + p.inner.a + p.inner.b + p.arr[0] + p.arr[2];
    a[3] = 5; p.inner.b = 9;
    return t * 1000 + a[3] + p.inner.b;
}
fn main() -> int32 {
    print_int(scribble(123456789)); newline();
    print_int(fresh()); newline();
    print_int(scribble(-1)); newline();
    print_int(fresh()); newline();
    return 0;
}
"""
    got = _run(tmp_path, src, opt)
    assert got[1] == "14" and got[3] == "14", got


def test_scalar_read_before_write_is_an_error(tmp_path):
    from .support import REPO, compile_cmd
    import subprocess
    src = tmp_path / "u.mettle"
    src.write_text("fn main() -> int32 {\n    var x: int32;\n    return x;\n}\n")
    r = subprocess.run(compile_cmd("--build", str(src), "-o", str(tmp_path / "u")),
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode != 0 and "error[E0104]" in r.stderr, r.stderr


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_pointer_difference_is_in_bytes(tmp_path, opt):
    src = """import "std/io";
struct S { a: int64; b: int32; }
fn main() -> int32 {
    var xs: int32[10];
    var ss: S[4];
    var p: int32* = &xs[7];
    var q: int32* = &xs[2];
    print_int(p - q); newline();                   // bytes, not elements
    print_int((p - q) / (int64)sizeof(int32)); newline();
    print_int(&ss[3] - &ss[0]); newline();
    print_int(*(q + 1) + (int64)(q + 5 == p)); newline();  // p + n still scales
    return 0;
}
"""
    assert _run(tmp_path, src, opt) == ["20", "5", "48", "1"]


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_float_literals_adopt_float32(tmp_path, opt):
    """`x + 0.1` with x: float32 is float32 arithmetic with the literal rounded to float32;
    beside an integer a float literal is float64."""
    src = """import "std/io";
fn main() -> int32 {
    var x: float32 = 16777216.0;
    var y: float64 = (float64)(x + 1.0);          // float32: 2^24 + 1 rounds back to 2^24
    print_int((int64)y); newline();
    var z: float32 = 0.1;
    print_int((int64)((float64)(z * 3.0) * 1000000000000.0)); newline();
    var i: int32 = 3;
    print_int((int64)((i + 0.5) * 10.0)); newline(); // float64 beside an integer
    return 0;
}
"""
    z3 = _f32(_f32(0.1) * _f32(3.0))
    assert _run(tmp_path, src, opt) == ["16777216", str(int(z3 * 1e12)), "35"]


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_sizeof_is_int64_whatever_the_context(tmp_path, opt):
    """Found while extending the differential tester: `sizeof` took the type of its
    context, so a uint8 initializer wrapped 400 to 144 before the division."""
    src = """import "std/io";
struct S { a: int64; b: int8; }
fn main() -> int32 {
    var x: uint8 = sizeof(int32[100]) / 2;
    var y: int8 = sizeof(S) - 100;
    print_int(x); newline();
    print_int(y); newline();
    print_int(sizeof(S) * 1000000000); newline();
    return 0;
}
"""
    assert _run(tmp_path, src, opt) == ["200", "-84", "16000000000"]


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_switch_on_a_narrow_value_promotes(tmp_path, opt):
    """Found while extending the differential tester: `case 300` was wrapped to the uint8
    subject's type and matched 44; C promotes the subject, so it never matches."""
    src = """import "std/io";
fn pick(z: uint8, w: int16) -> int64 {
    var r: int64 = 0;
    switch (z) { case 300: r = 1; break; case 44: r = 2; break; default: r = 3; }
    switch (w) { case 65535: r = r * 10 + 1; break; case -1: r = r * 10 + 2; break;
                 case 40000..50000: r = r * 10 + 4; break; default: r = r * 10 + 3; }
    return r;
}
fn main() -> int32 {
    print_int(pick(44, -1)); newline();
    print_int(pick(45, -25536)); newline();
    return 0;
}
"""
    assert _run(tmp_path, src, opt) == ["22", "33"]


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_float32_constant_holds_a_float32_value(tmp_path, opt):
    """Found by tools/difftest (seed 225): a folded integer constant stored to float32 kept
    its exact value 2147483647 in the IR, so -O printed 2147483647 where -O0 (and C) print
    the float32 value 2147483648."""
    src = """import "std/io";
fn main() -> int32 {
    const K: uint64 = 2147483647;
    var v: float32 = (K + (-(K - K)));
    var w: float32 = 16777217;
    var f: float64 = v;
    print_int((int64)f); newline();
    print_int((int64)w); newline();
    var z: float32 = 0.1;
    print_int((int64)(((float64)z) * 100000000000000000.0)); newline();
    return 0;
}
"""
    assert _run(tmp_path, src, opt) == ["2147483648", "16777216",
                                        str(int(_f32(0.1) * 1e17))]


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_constant_comparisons_are_exact_everywhere(tmp_path, opt):
    """Found by tools/difftest (seed 25, size 2): `K > -1` with `const K: uint32` compared in
    uint32 inside a function (so -1 became 4294967295) but exactly in a global initializer;
    a comparison of constants is now exact in every context, like constant arithmetic."""
    src = """import "std/io";
const K: uint32 = 256;
var g: int32 = (-32768) > K;
fn main() -> int32 {
    var v: uint64 = 291;
    print_int(g); newline();
    print_int(((-32768) > K) * (v * K)); newline();
    print_int((K > -1) + !(K < 5) + ((K > 1) && (2 > 1)) + (1.5 < 2)); newline();
    if (K < -1) { print_int(9); newline(); }
    switch ((-1) < K) { case 1: print_int(1); break; default: print_int(0); }
    newline();
    return 0;
}
"""
    assert _run(tmp_path, src, opt) == ["0", "0", "4", "1"]


@pytest.mark.parametrize("opt", OPT_LEVELS)
def test_float_constant_division_by_zero_is_ieee(tmp_path, opt):
    """Found by tools/difftest (seed 3193, size 2): `g - (65536.0 / K)` with a const K that
    is 0 did not compile ("float to int8 needs a cast": the unfoldable constant was lowered
    in its int8 neighbour's type). A float constant divided by zero folds to IEEE inf/NaN."""
    src = """import "std/io";
var g: int8 = 31;
fn main() -> int32 {
    const K: int32 = 0;
    var v: float64 = (g - (65536.0 / K)) + g;
    var w: float64 = -1.5 / K;
    var nan: float64 = 0.0 / K;
    print_int((int64)(v < -1.0e300)); newline();
    print_int((int64)(w < -1.0e300)); newline();
    print_int((int64)(nan != nan)); newline();
    return 0;
}
"""
    assert _run(tmp_path, src, opt) == ["1", "1", "1"]
