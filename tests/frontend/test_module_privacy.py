"""Module privacy (docs/reference/modules.md): a module that uses `export` keeps its other
top-level names to itself. Importers cannot see them (E0110, located at the use), private
names of different modules never collide, and two modules exporting one name collide at
the import (E0103). Runs the real CLI: errors are checked as the user sees them, and the
programs that compile are run."""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.host.support import REPO, compile_cmd, run
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)
import toolchain.compiler.targets.arm64  # noqa: F401  (compiles host code: the backends,
import toolchain.compiler.targets.x86_64  # noqa: F401  which the registry loads by name)
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401

GEOM = """export fn area(w: int32, h: int32) -> int32 { return helper(w) * h; }
export struct Box { w: int32; }
fn helper(x: int32) -> int32 { return x + 0 * SECRET_SEED; }
fn secret() -> int32 { return 42; }
const SECRET_SEED: int32 = 7;
struct Hidden { v: int32; }
"""
OTHER = """export fn twice(x: int32) -> int32 { return helper(x) * 2; }
fn helper(x: int32) -> int32 { return x + 100; }
"""


def _tree(tmp_path: Path, main: str) -> Path:
    (tmp_path / "geom.mettle").write_text(GEOM)
    (tmp_path / "other.mettle").write_text(OTHER)
    (tmp_path / "a.mettle").write_text("export fn f() -> int32 { return 1; }\n")
    (tmp_path / "b.mettle").write_text("export fn f() -> int32 { return 2; }\n")
    entry = tmp_path / "main.mettle"
    entry.write_text(main)
    return entry


def _build(tmp_path: Path, main: str) -> subprocess.CompletedProcess:
    entry = _tree(tmp_path, main)
    return subprocess.run(compile_cmd("--build", str(entry), "-o", str(tmp_path / "prog")),
                          cwd=REPO, capture_output=True, text=True)


def _refused(tmp_path: Path, main: str, code: str, line: int, col: int) -> str:
    r = _build(tmp_path, main)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"error[{code}]" in r.stderr, r.stderr
    assert f"main.mettle:{line}:{col}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "prog").exists()
    return r.stderr


def test_private_function_is_invisible_to_an_importer(tmp_path):
    err = _refused(tmp_path, 'import "geom";\nfn main() -> int32 { return secret(); }\n',
                   "E0110", 2, 29)
    assert "`secret` is private to module" in err and "geom.mettle" in err
    assert "__import_" not in err


def test_private_const_and_struct_are_invisible(tmp_path):
    _refused(tmp_path, 'import "geom";\nfn main() -> int32 { return SECRET_SEED; }\n',
             "E0110", 2, 29)
    err = _refused(tmp_path, 'import "geom";\nfn main() -> int32 { var h: Hidden; '
                   'return 0; }\n', "E0110", 2, 29)
    assert "`Hidden` is private" in err


def test_selective_and_aliased_imports_respect_privacy(tmp_path):
    _refused(tmp_path, 'import { area, secret } from "geom";\n'
             'fn main() -> int32 { return area(1, 1); }\n', "E0110", 1, 16)
    _refused(tmp_path, 'import "geom" as g;\nfn main() -> int32 { return g.secret(); }\n',
             "E0110", 2, 29)
    _refused(tmp_path, 'import "geom" as g;\nfn main() -> int32 { return g.nothing(); }\n',
             "E0101", 2, 29)


def test_private_names_of_two_modules_never_collide(tmp_path):
    # geom's helper(x) = x, other's helper(x) = x + 100: each module calls its own.
    r = _build(tmp_path, 'import "geom";\nimport "other";\n'
               'fn helper() -> int32 { return 1000; }\n'
               'fn main() -> int32 { return area(2, 3) + twice(1) + helper() - 1000; }\n')
    assert r.returncode == 0, r.stderr
    assert run(tmp_path / "prog").returncode == 6 + 202


def test_alias_reaches_exported_names(tmp_path):
    r = _build(tmp_path, 'import "geom" as g;\n'
               'fn main() -> int32 { var b: Box; b.w = 4; return g.area(b.w, 5); }\n')
    assert r.returncode == 0, r.stderr
    assert run(tmp_path / "prog").returncode == 20


def test_colliding_exports_are_an_error_at_the_import(tmp_path):
    err = _refused(tmp_path, 'import "a";\nimport "b";\nfn main() -> int32 { return f(); }\n',
                   "E0103", 2, 1)
    assert "`f` is public in both" in err and "a.mettle" in err and "b.mettle" in err


def test_an_entry_name_colliding_with_an_export_is_an_error_at_the_import(tmp_path):
    _refused(tmp_path, 'import "a";\nfn f() -> int32 { return 3; }\n'
             'fn main() -> int32 { return f(); }\n', "E0103", 1, 1)


def test_switch_over_an_imported_enum_sees_all_its_variants(tmp_path):
    (tmp_path / "col.mettle").write_text("export enum Color { Red, Green }\n")
    err = _refused(tmp_path, 'import "col";\nfn f(c: Color) -> int32 { switch (c) '
                   '{ case Red: return 1; } return 0; }\nfn main() -> int32 { return f(Green); }\n',
                   "E0015", 2, 27)
    assert "missing Green" in err


def test_a_kernel_calls_a_device_helper_through_an_alias(tmp_path, ptxas):
    from tests.support.spirv import find_spirv_val, validate
    from toolchain.compiler.driver import Options, compile_file
    (tmp_path / "dev.mettle").write_text(
        "export fn twice(p: float32*, i: int32) -> float32 { return p[i] * 2.0; }\n"
        "fn unused() -> int32 { return 0; }\n")
    entry = tmp_path / "main.mettle"
    entry.write_text('import "dev" as d;\nkernel(block = 64) k(f: float32*) {\n'
                     "    workgroup var t: float32[64];\n    t[thread.x] = f[thread.x];\n"
                     "    f[thread.x] = d.twice(&t[0], (int32)thread.x);\n}\n")
    ptx = compile_file(str(entry), Options(emit="ptx", gpu_arch="sm_80")).data.decode()
    assert "twice" in ptx and "unused" not in ptx
    ptxas(ptx, "sm_80")
    spv = compile_file(str(entry), Options(emit="spirv")).data
    if find_spirv_val():
        validate(spv)


def test_private_structs_enums_and_globals_of_two_modules_never_collide(tmp_path):
    for name, base in (("m1", 10), ("m2", 20)):
        (tmp_path / f"{name}.mettle").write_text(
            f"export fn {name}_value() -> int32 {{ var n: Node; n.v = {base}; "
            f"count = count + n.v; return count + (int32)On; }}\n"
            "struct Node { v: int32; }\nenum Mode { Off, On }\nvar count: int32 = 0;\n")
    r = _build(tmp_path, 'import "m1";\nimport "m2";\n'
               "fn main() -> int32 { return m1_value() + m2_value(); }\n")
    assert r.returncode == 0, r.stderr
    assert run(tmp_path / "prog").returncode == 11 + 21


# The later tier's rewrites (lifted methods, impl functions, generic instances) make new
# items; they belong to the module they came from and see its private names.
LATER_LIB = """export struct Counter {
    n: int64;
    method bump() -> int64 { return helper(this.n); }
}
export trait Score { fn score(self: Self) -> int64; }
impl Score for Counter { fn score(self: Self) -> int64 { return helper(self.n) * 10; } }
export fn twice<T>(x: T) -> T { return add_self<T>(x); }
fn add_self<T>(x: T) -> T { return x + x; }
fn helper(x: int64) -> int64 { return x + 1; }
export enum Opt<T> { Some(T), None }
export fn pick(x: int64) -> int64 { return match (wrap(x)) { case Some(v): v, case None: 0 }; }
fn wrap(x: int64) -> Opt<int64> { return Some(x); }
"""


def test_later_tier_items_see_their_own_modules_private_names(tmp_path):
    (tmp_path / "later.mettle").write_text(LATER_LIB)
    r = _build(tmp_path, 'import "later";\nfn main() -> int32 { var c: Counter = { n: 4 };\n'
               "    return (int32)(c.bump() + c.score() + twice<int64>(21) + pick(3)); }\n")
    assert r.returncode == 0, r.stderr
    assert run(tmp_path / "prog").returncode == 5 + 50 + 42 + 3


def test_an_instance_of_a_private_generic_is_private(tmp_path):
    (tmp_path / "later.mettle").write_text(LATER_LIB)
    err = _refused(tmp_path, 'import "later";\n'
                   "fn main() -> int32 { return (int32)add_self<int64>(2); }\n", "E0110", 2, 36)
    assert "is private to module" in err and "later.mettle" in err


def test_private_generic_templates_of_two_modules_never_collide(tmp_path):
    # m1 and m2 each keep a private twice<T>, Box<T> and Maybe<T> of their own (different
    # bodies and layouts); m3 exports a twice<T> that the entry reaches. Every use sees its
    # own module's template first, then the public one.
    for name, op, extra in (("m1", "x + x", ""), ("m2", "x * 3", "pad: int64; ")):
        (tmp_path / f"{name}.mettle").write_text(
            f"export fn {name}_value(x: int32) -> int32 {{\n"
            f"    var b: Box<int32>; b.v = twice<int32>(x);\n"
            "    var m: Maybe<int32> = Just(b.v);\n"
            "    return match (m) { case Just(v): v, case Nothing: -1 };\n}\n"
            f"fn twice<T>(x: T) -> T {{ return {op}; }}\n"
            f"struct Box<T> {{ {extra}v: T; }}\n"
            "enum Maybe<T> { Just(T), Nothing }\n")
    (tmp_path / "m3.mettle").write_text("export fn twice<T>(x: T) -> T { return x + 100; }\n")
    r = _build(tmp_path, 'import "m1";\nimport "m2";\nimport "m3";\n'
               "fn main() -> int32 { return m1_value(10) + m2_value(10) + twice<int32>(1); }\n")
    assert r.returncode == 0, r.stderr
    assert run(tmp_path / "prog").returncode == 20 + 30 + 101


def test_a_standard_module_is_named_as_imported_not_by_where_the_stdlib_lives(tmp_path):
    """A collision with, or a private name of, a standard module names it `std/<file>`:
    the installed stdlib's absolute path means nothing to the user (and differs between a
    checkout, a pip install and a PEX)."""
    err = _refused(tmp_path, 'import "std/alloc";\nexport fn mem_alloc() -> int32 '
                   '{ return 0; }\nfn main() -> int32 { return mem_alloc(); }\n',
                   "E0103", 1, 1)
    assert "`mem_alloc` is public in both 'std/alloc.mettle' and '" in err, err
    err = _refused(tmp_path, 'import "std/alloc" as al;\nfn main() -> int32 '
                   '{ return (int32)al.class_size(1); }\n', "E0110", 2, 36)
    assert "is private to module 'std/alloc.mettle'" in err, err
    err = _refused(tmp_path, 'import "std/alloc" as al;\nfn main() -> int32 '
                   '{ return al.nosuch; }\n', "E0101", 2, 29)
    assert "module 'std/alloc.mettle' (imported as `al`)" in err, err
    assert str(REPO / "std") not in err
