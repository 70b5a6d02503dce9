"""The host -O passes for recursion and loop nests, end to end on every host target that runs
here: tail-recursion (plain, void, accumulating with + * & | ^, wrap-around included),
inline-recursive (fib, ack, a two-call tree, a small frame array), unroll-jam (a matmul
over malloc'd arrays with a column count that leaves a remainder, one whose store goes
into an array it reads, which must stay unjammed, and a second jammed nest) print what -O0 prints, and --explain
names each decision."""
from __future__ import annotations

import subprocess

import pytest

from tests.host.cross import TARGETS, build_for, run_on, why_not_runnable
from tests.host.support import REPO, compile_cmd

PROGRAM = """
import "std/io";
import "std/mem";
fn fib(n: int64) -> int64 { if (n < 2) { return n; } return fib(n - 1) + fib(n - 2); }
fn ack(m: int64, n: int64) -> int64 {
    if (m == 0) { return n + 1; }
    if (n == 0) { return ack(m - 1, 1); }
    return ack(m - 1, ack(m, n - 1));
}
fn fact(n: uint32) -> uint32 { if (n <= 1) { return 1; } return n * fact(n - 1); }
fn mix(n: int64, x: int64) -> int64 {
    if (n <= 0) { return x; }
    if ((n & 1) == 0) { return (x * 31 + n) ^ mix(n - 1, x + 7); }
    return mix(n - 2, x * 3 - n) ^ (n << 40);
}
fn wrap(n: int32) -> int32 { if (n == 0) { return 1; } return wrap(n - 1) * 1000003; }
fn count(n: int64, p: int64*) { if (n <= 0) { return; } p[n % 4] = p[n % 4] + n; count(n - 1, p); }
fn tree(n: int64) -> int64 {
    if (n <= 1) { return 1; }
    return tree(n - 1) - tree(n - 2) * 2 + tree(n - 3);
}
fn small(n: int64) -> int64 {
    var t: int64[4];
    t[n & 3] = n;
    if (n <= 0) { return t[0]; }
    return small(n - 1) + t[n & 3];
}
fn main() -> int32 {
    println_int(fib(25));
    var s: int64 = 0;
    for i in 0..40 { s = s + ack(2, i); }
    println_int(s);
    println_int((int64)fact(13));
    println_int(mix(41, 5));
    println_int((int64)wrap(77));
    var cells: int64* = (int64*)malloc(32);
    for i in 0..4 { cells[i] = 0; }
    count(1000, cells);
    println_int(cells[0] * 1000000 + cells[1] * 1000 + cells[3]);
    println_int(tree(22));
    println_int(small(30));
    var n: int64 = 23;
    var a: float64* = (float64*)malloc(n * n * 8);
    var b: float64* = (float64*)malloc(n * n * 8);
    var c: float64* = (float64*)malloc(n * n * 8);
    for i in 0..n * n { a[i] = (float64)(i % 7) * 0.5; b[i] = (float64)(i % 5) - 1.0; }
    for i in 0..n {
        for j in 0..n {
            var t: float64 = 0.0;
            for k in 0..n { t = t + a[i * n + k] * b[k * n + j]; }
            c[i * n + j] = t;
        }
    }
    for i in 0..n {
        for j in 0..n {
            var t: float64 = 1.0;
            for k in 0..n { t = t + a[k * n + j] * 0.25; }
            a[i * n + j] = t;
        }
    }
    var total: float64 = 0.0;
    for i in 0..n * n { total = total + c[i] * (float64)(i % 11) + a[i]; }
    println_int((int64)(total * 1000.0));
    var d: float64* = (float64*)malloc(n * n * 8);
    for i in 0..n {
        for j in 1..n {
            var t: float64 = 0.0;
            for k in 0..n { t = t + c[i * n + k] * a[k * n + j]; }
            d[i * n + j] = t;
        }
    }
    total = 0.0;
    for i in 0..n { for j in 1..n { total = total + d[i * n + j] * (float64)(j % 3); } }
    println_int((int64)(total * 1000.0));
    return 0;
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_optimized_recursion_and_jammed_nests_print_what_O0_prints(tmp_path, target):
    if why_not_runnable(target):
        pytest.skip(why_not_runnable(target))
    plain = run_on(target, build_for(tmp_path, PROGRAM, target, "plain"))
    opt = run_on(target, build_for(tmp_path, PROGRAM, target, "opt", ["-O"]))
    assert plain.returncode == opt.returncode == 0, opt.stderr
    assert opt.stdout == plain.stdout and len(plain.stdout.split()) == 10


def test_explain_names_the_decisions(tmp_path):
    src = tmp_path / "p.mettle"
    src.write_text(PROGRAM)
    r = subprocess.run(compile_cmd("--emit-obj", str(src), "-o", str(tmp_path / "p.o"), "-O",
                                   "--explain"), cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for line in ("fib: line 4: tail-recursion: tail call to fib became a loop "
                 "(accumulator recursion: add)",
                 "fact: line 10: tail-recursion: tail call to fact became a loop "
                 "(accumulator recursion: mul)",
                 "count: line 17: tail-recursion: tail call to count became a loop",
                 "inline-recursive: inlined ack into itself 8 levels deep",
                 "inline-recursive: inlined tree into itself",
                 "main: line 48: unroll-jam: ran the outer loop 4 iterations at a time"):
        assert line in out, out
    assert out.count("unroll-jam:") == 2, out    # the nest storing into a[] is left alone
