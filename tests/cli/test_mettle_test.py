"""`mettle test FILE`: @test functions built into a native runner, one process per test."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir

ROOT = Path(__file__).resolve().parents[2]

APP = """import "std/io"
fn gcd(a: int64, b: int64) -> int64 {
    while (b != 0) { var t: int64 = b; b = a % b; a = t; }
    return a;
}
@test fn test_gcd() -> int64 {
    assert_eq(gcd(12, 18), 6);
    assert(gcd(7, 1) == 1);
    return 0;
}
@test fn test_wrong() -> int64 {
    println("printed by the test");
    assert_eq(gcd(12, 18), 5);
    return 0;
}
@test fn test_returns() -> int64 { return 4; }
@test fn test_crash() -> int64 { var p: int64* = (int64*)0; return *p; }
@test fn test_cond() -> int64 { assert(gcd(4, 2) == 3); return 0; }
fn main() -> int32 { return 0; }
"""


def mettle_test(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", "test", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_report_lines_assertions_and_exit_status(tmp_path):
    src = tmp_path / "app.mettle"
    src.write_text(APP)
    r = mettle_test(tmp_path, str(src))
    assert r.returncode == 1
    assert r.stdout == (
        "\nrunning 5 tests (native build)\n"
        "test test_gcd ... ok\n"
        "printed by the test\n"
        "test test_wrong ... FAILED\n"
        "test test_returns ... FAILED (returned 4; a test must return 0)\n"
        "test test_crash ... FAILED (crashed: runtime guard trap - null pointer dereference)\n"
        "test test_cond ... FAILED\n"
        f"\n1 passed, 4 failed ({src})\n")
    assert "error[E0022]: assertion failed in test 'test_wrong': left: 6, right: 5" in r.stderr
    assert f"--> {src}:13:5" in r.stderr
    assert "assertion failed in test 'test_cond': condition was false" in r.stderr
    assert f"{src}:17:68: null pointer dereference\n" in r.stderr   # the run-time check
    assert "Traceback" not in r.stderr


def test_a_release_runner_has_no_checks_so_a_null_read_crashes(tmp_path):
    src = tmp_path / "app.mettle"
    src.write_text(APP)
    r = mettle_test(tmp_path, str(src), "--filter=crash", "--release")
    assert r.returncode == 1
    assert "test test_crash ... FAILED (crashed: SIGSEGV)\n" in r.stdout
    assert "null pointer dereference" not in r.stderr


def test_unbounded_recursion_is_a_stack_overflow_not_a_bare_signal(tmp_path):
    src = tmp_path / "app.mettle"
    src.write_text("fn down(n: int64) -> int64 {\n"
                   "    if (n < 0) { return 0; }\n"
                   "    return down(n + 1) - down(n + 2);\n}\n"
                   "@test fn test_deep() -> int64 { return down(1); }\n")
    r = mettle_test(tmp_path, str(src))
    assert "test test_deep ... FAILED (crashed: stack overflow)\n" in r.stdout, r.stderr
    assert "stack overflow: the call stack passed its limit" in r.stderr
    r = mettle_test(tmp_path, str(src), "--release")
    assert "test test_deep ... FAILED (crashed: SIGSEGV)\n" in r.stdout, r.stderr


def test_a_test_exiting_1_is_not_a_failed_check(tmp_path):
    src = tmp_path / "app.mettle"
    src.write_text('extern fn exit(status: int32);\n'
                   "@test fn test_exit() -> int64 { exit(1); return 0; }\n")
    r = mettle_test(tmp_path, str(src))
    assert "test test_exit ... FAILED (exited with status 1)\n" in r.stdout, r.stderr


def test_filter_and_passing_run_exit_zero(tmp_path):
    src = tmp_path / "app.mettle"
    src.write_text(APP)
    r = mettle_test(tmp_path, str(src), "--filter=gcd", "-O")
    assert (r.returncode, r.stdout) == (
        0, f"\nrunning 1 test (native build)\ntest test_gcd ... ok\n\n1 passed ({src})\n")


def test_imported_tests_run_unless_the_module_exports(tmp_path):
    (tmp_path / "plain.mettle").write_text(
        "fn twice(x: int64) -> int64 { return 2 * x; }\n"
        "@test fn test_twice() -> int64 { assert_eq(twice(4), 8); return 0; }\n")
    (tmp_path / "pub.mettle").write_text(
        "export fn thrice(x: int64) -> int64 { return 3 * x; }\n"
        "@test fn test_private() -> int64 { return 1; }\n")
    src = tmp_path / "main.mettle"
    src.write_text('import "plain"\nimport "pub"\n'
                   "@test fn test_main() -> int64 { assert(thrice(twice(1)) == 6); return 0; }\n")
    r = mettle_test(tmp_path, str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1:4] == ["running 2 tests (native build)",
                                          "test test_twice ... ok", "test test_main ... ok"]


def test_no_tests_prints_a_note(tmp_path):
    src = tmp_path / "none.mettle"
    src.write_text("fn main() -> int32 { return 0; }\n")
    r = mettle_test(tmp_path, str(src))
    assert r.returncode == 0
    assert "running 0 tests" in r.stdout and "note: no @test functions found" in r.stdout


def test_compile_error_exits_1_before_running(tmp_path):
    src = tmp_path / "bad.mettle"
    src.write_text("@test fn t() -> int64 { return nope; }\n")
    r = mettle_test(tmp_path, str(src))
    assert r.returncode == 1 and "error[E0101]" in r.stderr and "running" not in r.stdout


def test_a_test_with_the_wrong_signature_reports_only_that(tmp_path):
    # the runner used to call it anyway and add errors located in its own generated text
    src = tmp_path / "sig.mettle"
    src.write_text("@test fn no_result() { }\n@test fn takes(x: int64) -> int64 { return x; }\n"
                   "@test fn fine() -> int64 { return 0; }\n")
    r = mettle_test(tmp_path, str(src))
    assert r.returncode == 1 and "running" not in r.stdout
    errors = [line for line in r.stderr.splitlines() if line.startswith("error[")]
    assert errors == [
        "error[E0022]: @test function `no_result` must return int64 (0 means pass)",
        "error[E0022]: @test function `takes` takes 1 parameter(s); tests must take none"], \
        r.stderr
    assert "<mettle test runner>" not in r.stderr


def test_normal_builds_type_check_tests_but_drop_them():
    module, _ = compile_to_ir("t.mettle", gpu=False, source_text=(
        "@test fn test_a() -> int64 { assert_eq(1 + 1, 2); return 0; }\n"
        "fn main() -> int32 { return 0; }\n"))
    assert "test_a" not in module.functions and "main" in module.functions
    with pytest.raises(CompileError) as ei:
        compile_to_ir("t.mettle", gpu=False, source_text=(
            "@test fn test_a() -> int64 { return nope; }\nfn main() -> int32 { return 0; }\n"))
    assert ei.value.diagnostics[0].code == "E0101"


@pytest.mark.parametrize("src,where", [
    ("fn main() -> int32 {\n  assert(1 == 1);\n  return 0;\n}", (2, 3)),
    ("@test fn t(x: int32) -> int64 { return 0; }\nfn main() -> int32 { return 0; }", (1, 10)),
    ("@test fn t() -> int32 { return 0; }\nfn main() -> int32 { return 0; }", (1, 17)),
    ("@test fn t() -> int64 { return 0; }\nfn main() -> int32 { return (int32)t(); }",
     (2, 36)),
])
def test_test_misuse_is_e0022(src, where):
    with pytest.raises(CompileError) as ei:
        compile_to_ir("t.mettle", gpu=False, source_text=src)
    d = ei.value.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == ("E0022", *where), d.message
