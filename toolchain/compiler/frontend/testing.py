"""`@test` functions and the test-runner program behind `mettle test FILE`.

A test is a top-level `@test fn name() -> int64` (no parameters; 0 means pass). Tests are
type-checked in every compile and dropped from the output of normal builds. `assert(c)` and
`assert_eq(a, b)` (int64 operands, usual implicit integer conversions) are only legal inside
a test (E0022).

For `mettle test`, the compile keeps the tests, drops the program's own `main`, and adds a
runner: `main(argc, argv)` runs the test whose index is argv[1] and reports on stdout with
marker lines the CLI parses (\\x02 and the returned value; \\x01, the assertion's index and
its operands, then exit status 101 when an assertion fails; a failed run-time check exits
102 after its located message on stderr). Each assertion call gets an
index into the TestPlan, which keeps its test name, kind and span for the report. The tests
of an imported module run too, unless that module uses `export` (its tests stay private);
the entry module's always run, imports first.
"""
from __future__ import annotations

from ...records import dataclass, field

from . import ast as A

ASSERT_FAILED_STATUS = 101
CHECK_FAILED_STATUS = 102   # a failed run-time check in the runner (normal builds exit 1)

RUNNER = """
extern fn __mt_putchar(c: int32) -> int32 = "putchar";
extern fn __mt_atoi(s: cstring) -> int32 = "atoi";
extern fn __mt_exit(code: int32) = "exit";
fn __mt_put_u(u: uint64) {
    if (u >= 10) { __mt_put_u(u / 10); }
    __mt_putchar((int32)(u % 10) + 48);
}
fn __mt_put(n: int64) {
    var u: uint64 = (uint64)n;
    if (n < 0) { __mt_putchar(45); u = (uint64)0 - u; }
    __mt_put_u(u);
}
fn __mt_assert(id: int64, c: int64) {
    if (c == 0) { __mt_putchar(1); __mt_put(id); __mt_putchar(10); __mt_exit(@STATUS@); }
}
fn __mt_assert_eq(id: int64, a: int64, b: int64) {
    if (a != b) {
        __mt_putchar(1); __mt_put(id); __mt_putchar(32); __mt_put(a); __mt_putchar(32); __mt_put(b);
        __mt_putchar(10); __mt_exit(@STATUS@);
    }
}
fn __mt_report(r: int64) { __mt_putchar(2); __mt_put(r); __mt_putchar(10); }
fn main(argc: int32, argv: cstring*) -> int32 {
    if (argc < 2) { return 2; }
    var which: int32 = __mt_atoi(argv[1]);
@CASES@
    return 3;
}
"""


@dataclass(eq=False)
class TestPlan:
    tests: list[str] = field(default_factory=list)           # names, in run order
    asserts: list[tuple] = field(default_factory=list)       # (test, kind, span)


def is_test(d) -> bool:
    return isinstance(d, A.FnDecl) and any(a.name == "test" for a in d.decorators)


def runnable_tests(modules: list[A.Module]) -> list[A.FnDecl]:
    """Tests that `mettle test` runs: the entry module's (the last loaded) and those of
    imported modules that export nothing."""
    out = []
    for i, m in enumerate(modules):
        entry = i == len(modules) - 1
        if not entry and any(getattr(d, "exported", False) for d in m.items):
            continue
        out += [d for d in m.items if is_test(d) and well_formed(d)]
    return out


def well_formed(d: A.FnDecl) -> bool:
    """Whether a test has the signature the runner calls (else E0022 alone says so: the
    runner does not call it, so no error of the runner's own text follows)."""
    return not d.params and _returns_int64(d)


def _returns_int64(d: A.FnDecl) -> bool:
    return isinstance(d.ret, A.NamedType) and d.ret.name == "int64" and not d.ret.args


def runner_items(tests: list[A.FnDecl]) -> list[A.Stmt]:
    from .parser import parse_source
    cases = "\n".join(f"    if (which == {i}) {{ __mt_report({d.name}()); return 0; }}"
                      for i, d in enumerate(tests))
    text = RUNNER.replace("@STATUS@", str(ASSERT_FAILED_STATUS)).replace("@CASES@", cases)
    return parse_source(text, "<mettle test runner>").items


def check_test_signature(d: A.FnDecl, bag) -> None:
    if d.params:
        bag.error("E0022", f"@test function `{d.name}` takes {len(d.params)} parameter(s); "
                  "tests must take none", d.span)
    if not _returns_int64(d):
        bag.error("E0022", f"@test function `{d.name}` must return int64 (0 means pass)",
                  d.ret.span if d.ret is not None else d.span)
