"""The Mettle backend the way a new user meets it, driving the real `./pants` in a clone:
a new directory with one kernel and one host program that imports a helper module;
`./pants tailor ::`, then one `mettle_kernel` and one `mettle_host_binary` without
`dependencies`, and `package`, `run`, `check`, `fmt` and `lint` work. Also: the module graph
from `dependencies --transitive`, and located errors (syntax error, missing import, import
cycle warning, bad field) with no Python traceback.

Until the formatter (`mettle fmt`) is part of the compiler, the clone gets a stand-in `fmt`
subcommand that only strips trailing blanks (same command line: `fmt FILE...` rewrites in
place); with the real formatter present the test uses it unchanged.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.rules.pants_harness import (has_bootstrapped_pants, make_clone, run_pants,
                                       source_root, tail)

ROOT = source_root()
pytestmark = pytest.mark.skipif(not has_bootstrapped_pants(ROOT),
                                reason="Pants is not bootstrapped (run ./pants once)")

KERNEL = """kernel scale(a: float32*, n: uint32) {
    var i: uint32 = block.x * 64 + thread.x;
    if (i < n) { a[i] = a[i] * 2.0; }
}
"""
HOST = """import "std/io";
import { greeting } from "helper";

fn main(argc: int32, argv: cstring*) -> int32 {
    puts(greeting());
    var i: int32 = 1;
    while (i < argc) { puts(argv[i]); i = i + 1; }
    return 0;
}
"""
# Trailing blanks: unformatted for any formatter.
HELPER = 'export fn greeting() -> cstring { return "hello from helper"; }   \n'
TARGETS = """
mettle_kernel(name="kern", source="kern.mettle")
mettle_host_binary(name="app", source="main.mettle", kernels=[":kern"])
"""
STANDIN = '''"""Test stand-in for `mettle fmt` (strips trailing blanks; --check lists files)."""
import sys


def main(args):
    check = "--check" in args
    files = [a for a in args if not a.startswith("--")]
    status = 0
    for path in files:
        text = open(path, encoding="utf-8").read()
        new = "\\n".join(line.rstrip() for line in text.rstrip().splitlines()) + "\\n"
        if new != text:
            if check:
                print(path)
                status = 1
            else:
                open(path, "w", encoding="utf-8").write(new)
    return status
'''


def _has_real_formatter(clone: Path) -> bool:
    probe = clone / "probe.mettle"
    probe.write_text("fn f() { }\n")
    try:
        proc = subprocess.run([sys.executable, "-m", "toolchain.compiler", "fmt", "--check",
                               str(probe)], cwd=clone, capture_output=True, text=True)
    finally:
        probe.unlink()
    return proc.returncode in (0, 1) and "E0090" not in proc.stderr


def _install_fmt_standin(clone: Path) -> None:
    (clone / "toolchain" / "compiler" / "fmt_standin.py").write_text(STANDIN)
    cli = clone / "toolchain" / "compiler" / "cli.py"
    text = cli.read_text()
    hook = "def _subcommand(argv: list[str]) -> int | None:\n"
    assert hook in text
    cli.write_text(text.replace(hook, hook + '    if argv[:1] == ["fmt"]:\n'
                                '        from .fmt_standin import main as fmt\n'
                                '        return fmt(argv[1:])\n', 1))


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    clone = make_clone(ROOT, tmp_path_factory.mktemp("backend") / "checkout")
    if not _has_real_formatter(clone):
        _install_fmt_standin(clone)
    new = clone / "newapp"
    new.mkdir()
    (new / "kern.mettle").write_text(KERNEL)
    (new / "main.mettle").write_text(HOST)
    (new / "helper.mettle").write_text(HELPER)
    return clone


@pytest.fixture(scope="module")
def tailored(clone):
    run = run_pants(clone, "tailor", "::")
    assert run.returncode == 0, tail(run)
    build = (clone / "newapp" / "BUILD").read_text()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=clone, capture_output=True, text=True).stdout
    (clone / "newapp" / "BUILD").write_text(build + TARGETS)
    return build, status


def test_tailor_writes_one_mettle_sources_target_and_nothing_else(tailored):
    build, status = tailored
    assert "mettle_sources(" in build and "python" not in build, build
    changed = {line[3:] for line in status.splitlines()}
    assert "newapp/BUILD" in changed
    assert not [p for p in changed if not p.startswith(("newapp/", "toolchain/compiler/"))], \
        status


def test_dependencies_list_the_module_graph(clone, tailored):
    run = run_pants(clone, "dependencies", "--transitive", "//newapp:app")
    assert run.returncode == 0, tail(run)
    listed = {line.strip() for line in run.log.splitlines() if "[" not in line}
    # Its own file, the helper it imports and the std module that resolves on Linux.
    assert {"newapp/main.mettle", "newapp/helper.mettle", "std/io.linux.mettle:mettle",
            "newapp:kern"} <= listed, tail(run)


def test_package_and_run_pass_arguments_through(clone, tailored):
    run = run_pants(clone, "package", "//newapp:app")
    assert run.returncode == 0, tail(run)
    dist = clone / "dist" / "newapp"
    assert ".entry scale" in (dist / "kern.ptx").read_text()
    assert (dist / "app").stat().st_mode & 0o111
    run = run_pants(clone, "run", "//newapp:app", "--", "first", "second arg")
    assert run.returncode == 0, tail(run)
    out = run.log.splitlines()
    start = out.index("hello from helper")
    assert out[start + 1:start + 3] == ["first", "second arg"], tail(run)


def test_check_passes_then_reports_a_located_syntax_error(clone, tailored):
    run = run_pants(clone, "check", "newapp::")
    assert run.returncode == 0, tail(run)
    assert "mettle succeeded" in run.log
    kern = clone / "newapp" / "kern.mettle"
    kern.write_text(KERNEL.replace("a[i] * 2.0;", "a[i] * ;"))
    try:
        check = run_pants(clone, "check", "newapp::")
        package = run_pants(clone, "package", "//newapp:kern")
    finally:
        kern.write_text(KERNEL)
    for run in (check, package):
        assert run.returncode != 0
        assert "error[E0" in run.log and " --> newapp/kern.mettle:3:" in run.log, tail(run)
        assert "Traceback" not in tail(run, 200)


def test_fmt_fixes_what_lint_reports(clone, tailored):
    helper = clone / "newapp" / "helper.mettle"
    run = run_pants(clone, "lint", "newapp::")
    assert run.returncode != 0 and "mettle-fmt failed" in run.log, tail(run)
    run = run_pants(clone, "fmt", "newapp::")
    assert run.returncode == 0, tail(run)
    assert not helper.read_text().splitlines()[0].endswith(" ")
    run = run_pants(clone, "lint", "newapp::")
    assert run.returncode == 0, tail(run)
    assert "mettle-warnings succeeded" in run.log and "mettle-fmt succeeded" in run.log


def test_missing_import_is_reported_at_the_importing_line(clone, tailored):
    main = clone / "newapp" / "main.mettle"
    main.write_text(HOST.replace('"helper"', '"helpr"'))
    try:
        run = run_pants(clone, "package", "//newapp:app")
    finally:
        main.write_text(HOST)
    assert run.returncode != 0
    assert 'newapp/main.mettle:2:1: import "helpr"' in run.log, tail(run)
    assert "newapp/helpr.mettle" in run.log and "Traceback" not in tail(run, 200)


def test_import_cycle_is_a_lint_warning_at_the_import(clone, tailored):
    cyc = clone / "cycle"
    cyc.mkdir()
    (cyc / "a.mettle").write_text('import "b";\nfn fa() -> int32 { return 1; }\n')
    (cyc / "b.mettle").write_text('import "a";\nfn fb() -> int32 { return 2; }\n')
    (cyc / "BUILD").write_text("mettle_sources()\n")
    run = run_pants(clone, "lint", "--only=mettle-warnings", "cycle::")
    assert run.returncode != 0
    assert "warning[W0103]" in run.log and " --> cycle/a.mettle:1:1" in run.log, tail(run)
