"""The host ABIs against each target's own C compiler: a shared library of C functions
(data/abi_peer.c: structs by value of every class, HFAs, more arguments than registers,
narrow integers, floats, C calling back into Mettle) is built by cc / aarch64-linux-gnu-gcc /
MinGW, linked by our linker and called from Mettle on x86-64 Linux (SysV), AArch64 Linux
(AAPCS64, under qemu) and Windows x64 (under Wine), unoptimised and with -O (register
allocation keeps values in callee-saved registers across those calls). Expected values are
computed here."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .cross import build_for, run_on, skip_unless_runnable
import toolchain.compiler.targets.arm64  # noqa: F401  (compiles host code: the backends,
import toolchain.compiler.targets.x86_64  # noqa: F401  which the registry loads by name)
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401

PEER = Path(__file__).with_name("data") / "abi_peer.c"
COMPILERS = {"x86_64-linux": "cc", "aarch64-linux": "aarch64-linux-gnu-gcc",
             "x86_64-windows": "x86_64-w64-mingw32-gcc"}

SOURCE = """
import "std/io";
struct V2 { x: float64; y: float64; }
struct F3 { a: float32; b: float32; c: float32; }
struct Mixed { a: int32; f: float32; }
struct Big { a: int64; b: int64; c: int64; tag: int8; }
struct Small { a: int8; b: int16; }
extern fn v2_add(p: V2, q: V2) -> V2;
extern fn f3_scale(v: F3, k: float32) -> F3;
extern fn mixed_mul(m: Mixed, k: int32) -> Mixed;
extern fn big_grow(b: Big, d: int64) -> Big;
extern fn small_swap(s: Small) -> Small;
extern fn many(a: int64, b: int32, c: int16, d: int8, e: uint64, f: uint32, g: uint16,
               h: uint8, i: int64, j: int32) -> int64;
extern fn manyf(a: float64, b: float32, c: float64, d: float32, e: float64, f: float64,
                g: float64, h: float64, i: float64, j: float32, k: int32, l: float64) -> float64;
extern fn mixed_args(a: int8, b: float64, c: Big, d: float32, e: V2, f: int32, g: F3, h: int64,
                     i: Small, j: Mixed) -> int64;
extern fn call_back(cb: fn(int64, float64, V2, Big, F3, Small) -> int64, k: int64) -> int64;
extern fn call_back_v2(cb: fn(V2, float64) -> V2, k: float64) -> V2;

fn mettle_cb(k: int64, x: float64, v: V2, b: Big, f: F3, s: Small) -> int64 {
    return k + (int64)(x * 100.0) + (int64)(v.x * 10.0) + (int64)(v.y * 100.0) + b.a + b.b * 2
        + b.c * 3 + (int64)b.tag * 4 + (int64)(f.a * 10.0) + (int64)(f.b * 100.0)
        + (int64)(f.c * 1000.0) + (int64)s.a * 7 + (int64)s.b * 11;
}
fn mettle_v2(v: V2, k: float64) -> V2 { var r: V2; r.x = v.x * k; r.y = v.y + k; return r; }

fn main() -> int32 {
    var p: V2; p.x = 1.5; p.y = -2.0;
    var q: V2; q.x = 0.25; q.y = 10.0;
    var r: V2 = v2_add(p, q);
    println_int((int64)(r.x * 100.0)); println_int((int64)(r.y * 100.0));
    var f: F3; f.a = 1.0; f.b = 2.5; f.c = -4.0;
    var g: F3 = f3_scale(f, 3.0);
    println_int((int64)(g.a * 10.0)); println_int((int64)(g.b * 10.0));
    println_int((int64)(g.c * 10.0));
    var m: Mixed; m.a = 21; m.f = 1.25;
    var n: Mixed = mixed_mul(m, 3);
    println_int((int64)n.a); println_int((int64)(n.f * 100.0));
    var b: Big; b.a = 1; b.b = 2; b.c = 3; b.tag = 126;
    var bg: Big = big_grow(b, 1000);
    println_int(bg.a); println_int(bg.b); println_int(bg.c); println_int((int64)bg.tag);
    var s: Small; s.a = 9; s.b = -7;
    var t: Small = small_swap(s);
    println_int((int64)t.a); println_int((int64)t.b);
    println_int(many(1, -2, 3, -4, 5, 6, 7, 200, -9, 10));
    println_int((int64)manyf(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11, 12.0));
    println_int(mixed_args(-3, 1.5, b, 0.5, p, 44, f, -6, s, m));
    println_int(call_back(mettle_cb, 5));
    var w: V2 = call_back_v2(mettle_v2, 0.5);
    println_int((int64)(w.x * 100.0)); println_int((int64)(w.y * 100.0));
    return 0;
}
"""


def expected() -> list[int]:
    big = (1, 2, 3, 126)
    out = [175, 800, 30, 75, -120, 63, 250, 1001, 1002, 1003, 127, -7, 9000]
    ints = [1, -2, 3, -4, 5, 6, 7, 200, -9, 10]
    out.append(sum(v * (k + 1) for k, v in enumerate(ints)))
    out.append(int(sum(float(v) * (k + 1) for k, v in enumerate(range(1, 13)))))
    mixed = (-3 + int(1.5 * 10) + big[0] + big[1] * 2 + big[2] * 3 + big[3] * 4 + int(0.5 * 100)
             + int(1.5 * 1000) + int(-2.0 * 10000) + 44 * 5 + int(1.0 * 6) + int(2.5 * 7)
             + int(-4.0 * 8) + -6 * 9 + 9 * 11 + -7 * 13 + 21 * 17 + int(1.25 * 19))
    out.append(mixed)
    cb = (5 + int(0.25 * 100) + int(1.5 * 10) + int(2.5 * 100) + 10 + 20 * 2 + 30 * 3 + 7 * 4
          + int(0.5 * 10) + int(1.5 * 100) + int(2.5 * 1000) + 3 * 7 + -4 * 11)
    out.append(cb * 2)
    out += [int((3.0 * 0.5 + 1.0) * 100), int((4.0 + 0.5) * 100)]
    return out


def _peer(tmp_path: Path, target: str) -> Path:
    cc = COMPILERS[target]
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is missing")
    lib = tmp_path / ("abi_peer.dll" if target.endswith("windows") else "libabi_peer.so")
    flags = ["-shared", "-O1"] + ([] if target.endswith("windows") else ["-fPIC"])
    r = subprocess.run([cc, *flags, "-o", str(lib), str(PEER)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return lib


@pytest.mark.parametrize("opt", ["-O0", "-O"])
@pytest.mark.parametrize("target", ["x86_64-linux", "aarch64-linux", "x86_64-windows"])
def test_calls_both_ways_with_c(tmp_path, target, opt):
    skip_unless_runnable(target)
    lib = _peer(tmp_path, target)
    extra = [f"--link-arg={lib}"] + (["-O"] if opt == "-O" else [])
    if not target.endswith("windows"):
        extra.append(f"--link-arg=--rpath={tmp_path}")
    exe = build_for(tmp_path, SOURCE, target, "abi", extra)
    out = run_on(target, exe, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [int(v) for v in out.stdout.split()] == expected()
