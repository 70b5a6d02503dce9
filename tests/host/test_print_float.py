"""std/io's print_f64/print_f32: the shortest "%g" text that reads back as the same value,
identical on every host target (x86-64 natively, AArch64 under qemu, Windows under Wine).

The oracle is Python's own correctly rounded "%.*g"; every printed text is also parsed back
and compared with the value, and its digit count checked against repr's shortest digits.
"""
from __future__ import annotations

import math
import random
import struct

import pytest

from .cross import TARGETS, build_for, run_on, skip_unless_runnable


def f32(v: float) -> float:
    """v rounded to float32 (out of range: an infinity, as a C cast gives)."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def shortest(v: float, single: bool) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    most = 9 if single else 17
    digits = 1
    while digits < most:
        back = float("%.*g" % (digits, v))
        if back == v or (single and f32(back) == v):
            break
        digits += 1
    return "%.*g" % (digits, v)


def values() -> tuple[list[float], list[float]]:
    rng = random.Random(29)
    doubles = [0.1, 1.0 / 3.0, 3.0, -0.0, 0.0, 1e100, 5e-324, 2.5e-05, 1.7976931348623157e308,
               2.2250738585072014e-308, 123456789012345680.0, -7.25, 1e21, 1e-7, 100.0]
    while len(doubles) < 60:
        v = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(v):
            doubles.append(v)
    doubles += [rng.uniform(-1000, 1000) for _ in range(20)]
    singles = [f32(v) for v in (0.1, 1.0 / 3.0, 16777216.0, 3.4028234663852886e38,
                                1.401298464324817e-45, -2.5, 1e-3)]
    while len(singles) < 40:
        v = struct.unpack("<f", rng.getrandbits(32).to_bytes(4, "little"))[0]
        if math.isfinite(v):
            singles.append(v)
    return doubles, singles


def program(doubles: list[float], singles: list[float]) -> str:
    lines = ['import "std/io";', "", "fn main() -> int32 {", "    var zero: float64 = 0.0;",
             "    println_f64(zero / zero);", "    println_f64(1.0 / zero);",
             "    println_f64(-1.0 / zero);"]
    lines += [f"    println_f64({v!r});" for v in doubles]
    lines += [f"    println_f32((float32){v!r});" for v in singles]
    lines += ["    print_f64(1.5);", '    print(" ");', "    print_f32((float32)0.1);",
              "    newline();", "    return 0;", "}", ""]
    return "\n".join(lines)


def expected(doubles: list[float], singles: list[float]) -> list[str]:
    return (["nan", "inf", "-inf"] + [shortest(v, False) for v in doubles] +
            [shortest(v, True) for v in singles] + ["1.5 0.1"])


def test_the_oracle_is_shortest_and_exact():
    doubles, singles = values()
    for v in doubles:
        text = shortest(v, False)
        assert float(text) == v
        assert len(text.split("e")[0].lstrip("-").replace(".", "").lstrip("0") or "0") <= \
            len(repr(v).split("e")[0].lstrip("-").replace(".", "").strip("0") or "0") + 1
    for v in singles:
        assert f32(float(shortest(v, True))) == v


@pytest.mark.parametrize("target", TARGETS)
def test_print_float_prints_the_shortest_round_trip_text(tmp_path, target):
    doubles, singles = values()
    exe = build_for(tmp_path, program(doubles, singles), target)
    skip_unless_runnable(target)
    proc = run_on(target, exe)
    assert proc.returncode == 0, proc.stderr
    got = proc.stdout.replace("\r\n", "\n").splitlines()
    assert got == expected(doubles, singles)
