"""Run-time checks of host code (docs/reference/runtime-checks.md): a failed check prints
`file:line:col: <what>` to stderr and exits with status 1, identically on x86-64 Linux,
AArch64 Linux (qemu) and Windows x64 (Wine), with and without -O; `--release` has none;
-O removes only the checks it proves redundant (opt/check_hoist.py)."""
from __future__ import annotations

import os
import subprocess

import pytest

from .cross import TARGETS, run_on, skip_unless_runnable
from .support import REPO, compile_cmd

EXIT = 1            # ir/checks.CHECK_EXIT_CODE, documented in runtime-checks.md

REPRO = """fn main() -> int32 {
    var xs: int32[4];
    var i: int32 = 9;
    xs[i] = 3;
    return 0;
}
"""

NULL_READ = """var g: int32 = 5;
fn get(k: int32) -> int32* { if (k > 0) { return &g; } return 0; }
fn main(argc: int32, argv: cstring*) -> int32 {
    var p: int32* = get(argc - 1);
    return *p;
}
"""


def compile_in(tmp_path, source: str, *flags: str, name: str = "app", emit=("--build",),
               target: str | None = None):
    """Compile `name.mettle` from inside tmp_path (so messages say `name.mettle:L:C`)."""
    (tmp_path / f"{name}.mettle").write_text(source)
    out = f"{name}-{target or 'host'}{'.exe' if target and 'windows' in target else ''}"
    args = [*emit, f"{name}.mettle", "-o", out, *flags]
    if target:
        args.append(f"--target={target}")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run(compile_cmd(*args), cwd=tmp_path, capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return tmp_path / out, r


def trap(tmp_path, source, *flags, target="x86_64-linux", name="app"):
    exe, _ = compile_in(tmp_path, source, *flags, name=name, target=target)
    return run_on(target, exe, cwd=tmp_path)


@pytest.mark.parametrize("opt", [(), ("-O",)], ids=["plain", "O"])
@pytest.mark.parametrize("target", TARGETS)
def test_issue_reproductions_trap_on_every_target(tmp_path, target, opt):
    skip_unless_runnable(target)
    r = trap(tmp_path, REPRO, *opt, target=target)
    assert (r.returncode, r.stderr) == \
        (EXIT, "app.mettle:4:5: index out of bounds: index 9, length 4\n"), r
    r = trap(tmp_path, NULL_READ, *opt, target=target, name="nul")
    assert (r.returncode, r.stderr) == (EXIT, "nul.mettle:5:12: null pointer dereference\n")


KINDS = {
    "negative index": ("var xs: int32[4]; var i: int32 = -1; xs[i] = 3;",
                       "index out of bounds: index -1, length 4"),
    "global array": ("g[k + 6] = 1;", "index out of bounds: index 7, length 3"),
    "struct field array": ("var s: S; s.a[k + 1] = 1;",
                           "index out of bounds: index 2, length 2"),
    "array through a struct pointer": ("var s: S; var p: S* = &s; p->a[k + 4] = 1;",
                                       "index out of bounds: index 5, length 2"),
    "string": ('var s: string = "abc"; var c: int32 = (int32)s[k + 2];',
               "index out of bounds: index 3, length 3"),
    "pointer index": ("var p: int32* = nothing(k); p[k] = 1;", "null pointer dereference"),
    "deref write": ("var p: int32* = nothing(k); *p = 1;", "null pointer dereference"),
    "arrow": ("var p: S* = (S*)nothing(k); p->b = 1;", "null pointer dereference"),
    "dot on a pointer": ("var p: S* = (S*)nothing(k); p.b = 1;", "null pointer dereference"),
    "division": ("var z: int32 = k - 1; var q: int32 = 7 / z;", "division by zero"),
    "remainder": ("var z: int64 = (int64)k - 1; var q: int64 = 7 % z;", "remainder by zero"),
    "compound division": ("var q: uint32 = 7; q /= (uint32)(k - 1);", "division by zero"),
}
KIND_PRELUDE = """struct S { a: int32[2]; b: int32; }
var g: int32[3];
fn nothing(k: int32) -> int32* { if (k > 5) { return &g[0]; } return 0; }
fn main(argc: int32, argv: cstring*) -> int32 {
    var k: int32 = argc;
    """


@pytest.mark.parametrize("opt", [(), ("-O",)], ids=["plain", "O"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_check_kind(tmp_path, kind, opt):
    stmt, what = KINDS[kind]
    source = KIND_PRELUDE + stmt + "\n    return 0;\n}\n"
    r = trap(tmp_path, source, *opt)
    assert r.returncode == EXIT, r
    line = r.stderr.strip()
    assert line.startswith("app.mettle:6:") and line.endswith(": " + what), line
    assert r.stdout == ""


@pytest.mark.parametrize("target", TARGETS)
def test_each_kind_same_message_on_every_target(tmp_path, target):
    skip_unless_runnable(target)
    for i, kind in enumerate(("string", "division", "arrow", "negative index")):
        stmt, what = KINDS[kind]
        r = trap(tmp_path, KIND_PRELUDE + stmt + "\n    return 0;\n}\n", target=target,
                 name=f"k{i}")
        assert r.returncode == EXIT and r.stderr.startswith(f"k{i}.mettle:6:") and \
            r.stderr.endswith(": " + what + "\n"), (kind, r)


NULL_CALLS = """import "std/io"
struct H { f: fn(int32) -> int32; }
fn twice(x: int32) -> int32 { return 2 * x; }
fn pick(k: int32) -> fn(int32) -> int32 { if (k > 5) { return &twice; } return 0; }
fn main(argc: int32, argv: cstring*) -> int32 {
    var c: Fn(int32) -> int32 = 0;
    var t: fn(int32) -> int32 = pick(argc);
    var h: H; h.f = pick(argc);
    println_int(7);
    if (argc == 1) { println_int(c(3)); }
    if (argc == 2) { println_int(t(3)); }
    if (argc == 3) { println_int(h.f(3)); }
    return 0;
}
"""


@pytest.mark.parametrize("opt", [(), ("-O",)], ids=["plain", "O"])
@pytest.mark.parametrize("target", TARGETS)
def test_calls_through_null_function_values(tmp_path, target, opt):
    # a closure, a thin function pointer and a function-pointer field, each null: the
    # callee's location, not a segmentation fault
    skip_unless_runnable(target)
    exe, _ = compile_in(tmp_path, NULL_CALLS, *opt, target=target)
    for argv, line in (((), 10), (("a",), 11), (("a", "b"), 12)):
        r = run_on(target, exe, argv, cwd=tmp_path)
        assert (r.returncode, r.stdout.replace("\r", ""), r.stderr.replace("\r", "")) == \
            (EXIT, "7\n", f"app.mettle:{line}:34: call through a null function value\n"), r


def test_passing_checks_change_nothing(tmp_path):
    src = """import "std/io";
struct P { x: int32; v: int32[3]; }
fn main() -> int32 {
    var xs: int32[5] = [5, 4, 3, 2, 1];
    var p: P; var pp: P* = &p;
    var s: string = "hello";
    var t: int64 = 0;
    for i in 0..5 { t = t + (int64)xs[i] * (int64)s[i]; pp->v[i % 3] = i; }
    var d: int32 = xs[1];
    println_int(t / (int64)d + (int64)(pp->v[2] % d) + (int64)p.v[0]);
    return 0;
}
"""
    for flags in ((), ("-O",), ("--release",)):
        exe, _ = compile_in(tmp_path, src, *flags)
        r = run_on("x86_64-linux", exe)
        assert (r.returncode, r.stdout, r.stderr) == (0, "398\n", ""), flags


def _ir(tmp_path, source, *flags):
    _, r = compile_in(tmp_path, source, "--dump-ir", *flags, emit=("--emit-obj",))
    return r.stdout


def test_release_has_no_checks_and_kernels_never_do(tmp_path):
    assert "check." in _ir(tmp_path, REPRO)
    assert "check." in _ir(tmp_path, REPRO, "-O")
    assert "check." not in _ir(tmp_path, REPRO, "--release")
    assert "check." not in _ir(tmp_path, REPRO, "-r")
    kernel = """fn helper(p: float32*, i: int32) -> float32 { return p[i] / (float32)i; }
kernel scale(x: float32*, n: int32) {
    var t: int32 = thread.x;
    var k: int32 = t / n;
    if (t < n) { x[t] = helper(x, t) + (float32)k; }
}
"""
    (tmp_path / "k.mettle").write_text(kernel)
    r = subprocess.run(compile_cmd("--emit-ptx", "k.mettle", "-o", "k.ptx", "--dump-ir"),
                       cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0, r.stderr
    assert "check." not in r.stdout and "check_fail" not in (tmp_path / "k.ptx").read_text()


HOISTED = """var table: int32[16];
fn fill(n: int32) -> int32 {
    var xs: int32[8];
    for i in 0..n { xs[i] = i; }
    var s: int32 = 0;
    for i in 0..n { s = s + xs[i] + table[i + 1]; }
    return s;
}
fn pick(ix: int32*, n: int32) -> int32 {
    var xs: int32[8];
    var s: int32 = 0;
    for i in 0..n { s = s + xs[ix[i]]; }
    return s;
}
fn main(argc: int32, argv: cstring*) -> int32 {
    var ix: int32[3] = [1, 7, 8];
    var r: int32 = fill(7 + argc) + pick(&ix[0], 2);
    r = r + pick(&ix[0], 3);
    return r;
}
"""


def test_O_hoists_provable_range_checks_and_keeps_the_others(tmp_path):
    exe, r = compile_in(tmp_path, HOISTED, "-O", "--explain")
    hoisted = [line for line in r.stdout.splitlines() if "check-hoist: hoisted" in line]
    assert any(line.startswith("fill: line 4:") and "counted range" in line
               for line in hoisted), r.stdout
    assert sum(line.startswith("fill: line 6:") for line in hoisted) == 2, r.stdout
    assert not any(line.startswith("pick:") and "check.index" in line for line in hoisted)
    ir = _ir(tmp_path, HOISTED, "-O")
    fill = ir[ir.index("function @fill"):ir.index("function @pick")]
    pick = ir[ir.index("function @pick"):]
    pick = pick[:pick.index("\n}")]
    # fill: no check in a loop; one check.range per indexed array, before its loop
    assert fill.count("check.range") == 3 and "check.index" not in fill, fill
    body = pick[pick.index("loop.body"):] if "loop.body" in pick else pick
    assert "check.index" in body, pick            # ix[i] indexes xs: unprovable, kept
    # fill(8): 0..7 fits; pick(.., 3) reads xs[8]: the kept check traps, as without -O
    for flags in ((), ("-O",)):
        exe, _ = compile_in(tmp_path, HOISTED, *flags, name="h")
        r = run_on("x86_64-linux", exe)
        assert (r.returncode, r.stderr) == \
            (EXIT, "h.mettle:12:29: index out of bounds: index 8, length 8\n"), (flags, r)


def test_hoisted_range_reports_the_index_the_loop_fails_at(tmp_path):
    src = """fn main(argc: int32, argv: cstring*) -> int32 {
    var xs: int32[4];
    var n: int32 = argc + 9;
    for i in 1..n { xs[i - 1] = i; }
    return xs[0];
}
"""
    outs = set()
    for flags in ((), ("-O",)):
        r = trap(tmp_path, src, *flags)
        outs.add((r.returncode, r.stderr))
    assert outs == {(EXIT, "app.mettle:4:21: index out of bounds: index 4, length 4\n")}


@pytest.mark.parametrize("start", ["0", "6"])
def test_O_reports_the_first_failure_of_the_plain_build(tmp_path, start):
    """An invariant null check after a range check in the body: with start 0 the null check
    fails first (iteration 1), with start 6 the index does; -O must agree either way."""
    src = f"""fn nothing(k: int32) -> int32* {{ return 0; }}
fn main(argc: int32, argv: cstring*) -> int32 {{
    var xs: int32[4];
    var p: int32* = nothing(argc);
    for i in {start}..argc + 9 {{ xs[i] = 1; *p = 2; }}
    return 0;
}}
"""
    results = set()
    for flags in ((), ("-O",)):
        r = trap(tmp_path, src, *flags)
        results.add((r.returncode, r.stderr))
    want = "app.mettle:5:39: null pointer dereference\n" if start == "0" else \
        "app.mettle:5:28: index out of bounds: index 6, length 4\n"
    assert results == {(EXIT, want)}


def test_a_loop_with_a_call_keeps_its_checks(tmp_path):
    """Output printed before the failing iteration must still appear: no hoisting."""
    src = """import "std/io";
fn main(argc: int32, argv: cstring*) -> int32 {
    var xs: int32[3];
    for i in 0..argc + 4 { println_int((int64)i); xs[i] = 1; }
    return 0;
}
"""
    for flags in ((), ("-O",)):
        r = trap(tmp_path, src, *flags)
        assert (r.returncode, r.stdout, r.stderr) == \
            (EXIT, "0\n1\n2\n3\n", "app.mettle:4:51: index out of bounds: index 3, length 3\n"), \
            (flags, r)


def test_unsigned_counters_hoist_only_what_is_exact(tmp_path):
    """`xs[i - 1]` over a uint32 counter and a uint64 counter: -O fails exactly where the
    plain build does (and passes where it passes)."""
    src = """import "std/io";
fn main(argc: int32, argv: cstring*) -> int32 {
    var xs: int32[4];
    var n: uint32 = (uint32)argc + 4;
    var t: int64 = 0;
    for i in (uint32)1..n { xs[i - 1] = (int32)i; t = t + (int64)xs[i - 1]; }
    println_int(t);
    var m: uint64 = (uint64)argc + 4;
    for j in (uint64)0..m { t = t + (int64)xs[j]; }
    return (int32)t;
}
"""
    results = set()
    for flags in ((), ("-O",)):
        r = trap(tmp_path, src, *flags)
        results.add((r.returncode, r.stdout, r.stderr))
    assert results == {(EXIT, "10\n", "app.mettle:9:44: index out of bounds: index 4, length 4\n")}


def _random_loop(seed: int) -> str:
    """A counted loop over two fixed arrays at offsets, maybe a pointer that may be null,
    maybe a print per iteration, with a run-time trip count: it may pass or fail anywhere."""
    import random
    r = random.Random(seed)
    t = r.choice(["int32", "int64", "uint32", "int16"])
    c1, c2 = r.randint(-2, 2), r.randint(-1, 3)
    stmts = [f"a[i {'+' if c1 >= 0 else '-'} {abs(c1)}] = (int32)i;",
             f"s = s + (int64)b[i {'+' if c2 >= 0 else '-'} {abs(c2)}];"]
    if r.random() < 0.4:
        stmts.append("s = s + (int64)*p;")
    r.shuffle(stmts)
    if r.random() < 0.2:
        stmts.insert(0, "println_int((int64)i);")
    return f"""import "std/io";
var cell: int32 = 3;
fn getp(k: int32) -> int32* {{ if (k > {r.randint(0, 2)}) {{ return &cell; }} return 0; }}
fn main(argc: int32, argv: cstring*) -> int32 {{
    var a: int32[{r.randint(1, 8)}];
    var b: int32[{r.randint(1, 8)}];
    var p: int32* = getp(argc);
    var s: int64 = 0;
    var n: {t} = ({t})(argc + {r.randint(-2, 6)});
    for i in ({t}){r.randint(0, 4)}{'..=' if r.random() < 0.3 else '..'}n {{ {' '.join(stmts)} }}
    println_int(s);
    return 0;
}}
"""


@pytest.mark.parametrize("seed", range(10))
def test_O_fails_like_the_plain_build_on_random_loops(tmp_path, seed):
    src = _random_loop(seed)
    got = set()
    for flags in ((), ("-O",)):
        r = trap(tmp_path, src, *flags)
        got.add((r.returncode, r.stdout, r.stderr))
    assert len(got) == 1, (src, got)


# Unbounded recursion (ir/stack_guard.py): the checked build says so instead of dying of
# SIGSEGV with no message; the release build and other faults keep the plain signal.
RECURSE = """fn down(n: int64) -> int64 {
    var pad: int64[8];
    pad[n % 8] = n;
    if (n < 0) { return 0; }
    return down(n + 1) - down(n + 2) + pad[n % 8];
}
fn main() -> int32 { return (int32)down(1); }
"""
STACK_MESSAGE = "stack overflow: the call stack passed its limit (unbounded recursion?)\n"
SIGSEGV = -11


@pytest.mark.parametrize("opt", [(), ("-O",)], ids=["plain", "O"])
@pytest.mark.parametrize("target", ("x86_64-linux", "aarch64-linux"))
def test_stack_overflow_says_so(tmp_path, target, opt):
    skip_unless_runnable(target)
    r = trap(tmp_path, RECURSE, *opt, target=target)
    assert (r.returncode, r.stdout, r.stderr) == (EXIT, "", STACK_MESSAGE), r


def test_other_faults_and_release_builds_keep_the_signal(tmp_path):
    r = trap(tmp_path, RECURSE, "--release", name="rel")
    assert (r.returncode, r.stderr) == (SIGSEGV, ""), r
    wild = """fn main(argc: int32, argv: cstring*) -> int32 {
    var p: int32* = (int32*)(int64)(16 * argc);
    return *p;
}
"""
    r = trap(tmp_path, wild, name="wild")         # not null, not the stack: no message
    assert (r.returncode, r.stderr) == (SIGSEGV, ""), r
    deep = """fn depth(n: int32) -> int32 {
    var pad: int32[4];
    pad[n % 4] = n;
    if (n == 0) { return 0; }
    return 1 + depth(n - 1) + pad[n % 4] - n;
}
fn main() -> int32 { return depth(20000) - 20000; }
"""
    assert trap(tmp_path, deep, name="deep").returncode == 0      # the guard costs nothing


def test_windows_release_and_libraries_get_no_guard(tmp_path):
    assert _guarded(tmp_path, RECURSE)
    assert not _guarded(tmp_path, RECURSE, "--release")
    assert not _guarded(tmp_path, RECURSE, "--target=x86_64-windows")
    assert not _guarded(tmp_path, "fn helper(n: int32) -> int32 { return n + 1; }\n")


def _guarded(tmp_path, source, *flags) -> bool:
    """Whether the object calls sigaltstack (the guard is added after --dump-ir's point)."""
    obj, _ = compile_in(tmp_path, source, *flags, emit=("--emit-obj",), name="g")
    return b"sigaltstack" in obj.read_bytes()
