"""Import resolution and module loading (LANGUAGE §6) over temporary directory trees."""
from pathlib import Path

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.modules import load_program


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def names(prog):
    return [Path(m.path).name for m in prog.modules]


def test_std_lookup_prefers_linux_variant_and_dependency_order(tmp_path):
    std = tmp_path / "std"
    write(std, "io.mettle", "fn generic() { }")
    write(std, "io.linux.mettle", 'import "std/mem"\nfn puts_linux() { }')
    write(std, "mem.mettle", "fn malloc_x() { }")
    entry = write(tmp_path / "app", "main.mettle", 'import "std/io";\nfn main() -> int32 { }')
    prog = load_program(entry, [], std, cwd=tmp_path)
    assert names(prog) == ["mem.mettle", "io.linux.mettle", "main.mettle"]
    assert prog.entry.imports[0].module.path.endswith("io.linux.mettle")


def test_explicit_extension_is_kept(tmp_path):
    write(tmp_path, "lib/a.txt", "fn a() { }")
    entry = write(tmp_path, "main.mettle", 'import "lib/a.txt"')
    assert names(load_program(entry, [], tmp_path / "nostd", cwd=tmp_path))[0] == "a.txt"


def test_lookup_order_relative_then_include_then_cwd(tmp_path):
    write(tmp_path, "inc/util.mettle", "fn from_include() { }")
    write(tmp_path, "cwd/util.mettle", "fn from_cwd() { }")
    entry = write(tmp_path, "src/main.mettle", 'import "util"')
    prog = load_program(entry, [tmp_path / "inc"], None, cwd=tmp_path / "cwd")
    assert prog.modules[0].ast.items[0].name == "from_include"
    write(tmp_path, "src/util.mettle", "fn from_relative() { }")
    prog = load_program(entry, [tmp_path / "inc"], None, cwd=tmp_path / "cwd")
    assert prog.modules[0].ast.items[0].name == "from_relative"


def test_cwd_is_last_resort(tmp_path):
    write(tmp_path, "cwd/util.mettle", "fn from_cwd() { }")
    entry = write(tmp_path, "src/main.mettle", 'import "util"')
    prog = load_program(entry, [], None, cwd=tmp_path / "cwd")
    assert prog.modules[0].ast.items[0].name == "from_cwd"


def test_mettle_deps_package_roots_found_walking_up(tmp_path):
    write(tmp_path, "mettle.deps", "# packages\nvec=third/vec-1.0\n")
    write(tmp_path, "third/vec-1.0/core.mettle", "export fn add() { }\nfn helper() { }")
    entry = write(tmp_path, "app/deep/main.mettle", 'import "vec/core" as v')
    prog = load_program(entry, [], None, cwd=tmp_path)
    b = prog.entry.imports[0]
    assert (b.alias, Path(b.module.path).name) == ("v", "core.mettle")


def test_absolute_path_import(tmp_path):
    lib = write(tmp_path, "abs/lib.mettle", "fn x() { }")
    entry = write(tmp_path, "main.mettle", f'import "{lib.with_suffix("")}"')
    assert names(load_program(entry, [], None, cwd=tmp_path)) == ["lib.mettle", "main.mettle"]


def test_off_target_guard_is_never_looked_up(tmp_path):
    entry = write(tmp_path, "main.mettle", 'import "win/only" if windows\nimport "l" if linux')
    write(tmp_path, "l.mettle", "fn l() { }")
    prog = load_program(entry, [], None, cwd=tmp_path)
    assert names(prog) == ["l.mettle", "main.mettle"]


def test_export_hides_other_top_level_names(tmp_path):
    write(tmp_path, "lib.mettle", "export fn api() { }\nfn helper() { }\nvar state: int32\n"
                                  "enum Mode { A, B }\nextern fn abs(x: int32) -> int32")
    write(tmp_path, "open.mettle", "fn everything() { }")
    entry = write(tmp_path, "main.mettle", 'import "lib"\nimport "open"\nfn private_main() { }')
    prog = load_program(entry, [], None, cwd=tmp_path)
    lib, opened, main = prog.modules
    assert lib.uses_export and lib.public == {"api"}
    assert set(lib.hidden) == {"helper", "state", "Mode", "A", "B", "abs"}
    helper = lib.ast.items[1]
    assert helper.internal_name == f"__import_{lib.key}_helper"
    assert lib.ast.items[0].internal_name is None
    assert lib.ast.items[4].internal_name is None  # extern keeps its link symbol
    assert opened.public == {"everything"} and not opened.hidden
    assert "private_main" in main.public


def test_selective_and_alias_bindings(tmp_path):
    write(tmp_path, "lib/vec.mettle", "export fn add() { }\nexport struct Vec { x: int32 }\n"
                                      "fn hidden() { }")
    entry = write(tmp_path, "main.mettle", 'import { add, Vec } from "lib/vec"\n'
                                          'import "lib/vec" as vec')
    prog = load_program(entry, [], None, cwd=tmp_path)
    sel, alias = prog.entry.imports
    assert sel.names == ["add", "Vec"] and sel.alias is None
    assert alias.alias == "vec" and alias.module is sel.module
    assert len(prog.modules) == 2  # parsed once


def test_selecting_a_hidden_name_is_located_error(tmp_path):
    write(tmp_path, "lib.mettle", "export fn add() { }\nfn hidden() { }")
    entry = write(tmp_path, "main.mettle", 'import { add, hidden } from "lib"')
    with pytest.raises(CompileError) as ei:
        load_program(entry, [], None, cwd=tmp_path)
    d = ei.value.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == ("E0110", 1, 15)   # private, not missing
    assert "private to module" in d.message


def test_selecting_a_missing_name_is_located_error(tmp_path):
    write(tmp_path, "lib.mettle", "export fn add() { }")
    entry = write(tmp_path, "main.mettle", 'import { add, nothing } from "lib"')
    with pytest.raises(CompileError) as ei:
        load_program(entry, [], None, cwd=tmp_path)
    d = ei.value.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == ("E0105", 1, 15)


def test_duplicate_plain_import_is_skipped(tmp_path):
    write(tmp_path, "a.mettle", "fn a() { }")
    entry = write(tmp_path, "main.mettle", 'import "a"\nimport "a"\nimport "./a.mettle"')
    prog = load_program(entry, [], None, cwd=tmp_path)
    assert len(prog.entry.imports) == 1 and len(prog.modules) == 2


def test_cycle_is_a_warning_and_skipped(tmp_path):
    write(tmp_path, "a.mettle", 'import "b"\nfn a() { }')
    write(tmp_path, "b.mettle", 'import "a"\nfn b() { }')
    entry = write(tmp_path, "main.mettle", 'import "a"')
    prog = load_program(entry, [], None, cwd=tmp_path)
    assert names(prog) == ["b.mettle", "a.mettle", "main.mettle"]
    [w] = prog.warnings
    assert (w.code, w.severity, w.span.line, Path(w.span.file).name) == (
        "W0103", "warning", 1, "b.mettle")


def test_missing_module_is_located_error(tmp_path):
    entry = write(tmp_path, "main.mettle", 'fn f() { }\nimport "nope/none"')
    with pytest.raises(CompileError) as ei:
        load_program(entry, [], None, cwd=tmp_path)
    d = ei.value.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == ("E0101", 2, 1)


def test_bad_utf8_is_located_error(tmp_path):
    entry = tmp_path / "main.mettle"
    entry.write_bytes(b"fn f() {\n  x = \"ok\xff\"\n}")
    with pytest.raises(CompileError) as ei:
        load_program(entry, [], None, cwd=tmp_path)
    d = ei.value.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == ("E0102", 2, 10)


def test_parse_errors_in_imported_modules_are_collected(tmp_path):
    write(tmp_path, "a.mettle", "fn a( { }")
    write(tmp_path, "b.mettle", "var x = 1")
    entry = write(tmp_path, "main.mettle", 'import "a"\nimport "b"')
    with pytest.raises(CompileError) as ei:
        load_program(entry, [], None, cwd=tmp_path)
    assert [(d.code, Path(d.span.file).name) for d in ei.value.diagnostics] == [
        ("E0002", "a.mettle"), ("E0003", "b.mettle")]
