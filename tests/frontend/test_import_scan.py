"""The import scanner build tools use (frontend/import_scan.py, `mettle imports`): it finds
exactly the imports the compiler loads, and its first existing candidate is the compiler's
choice (checked against modules.load_program on real trees)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from toolchain.compiler import cli
from toolchain.compiler.frontend.import_scan import resolve_candidates, scan_imports
from toolchain.compiler.frontend.modules import load_program

SOURCE = '''// a comment: import "not/this";
import "std/io";
import "helper" as h;
import { a, b } from "lib/util";
import "std/win" if windows;
import "std/lin" if linux
fn f() { var s: string = "import \\"nope\\""; }
struct S { x: int32 }
import "late";
'''


def test_scan_finds_every_top_level_import_with_its_form_and_line():
    found = scan_imports(SOURCE, "m.mettle")
    assert [(i.path, i.alias, i.names and [n.name for n in i.names], i.guard, i.span.line)
            for i in found] == [
        ("std/io", None, None, None, 2), ("helper", "h", None, None, 3),
        ("lib/util", None, ["a", "b"], None, 4), ("std/win", None, None, "windows", 5),
        ("std/lin", None, None, "linux", 6), ("late", None, None, None, 9)]


def test_a_broken_import_is_skipped_and_the_rest_still_found():
    found = scan_imports('import 42;\nimport "ok";\nfn f( {\n', "m.mettle")
    assert [i.path for i in found] == ["ok"]


def test_guarded_imports_have_candidates_only_for_their_os():
    win, lin = scan_imports(SOURCE, "app/m.mettle")[3:5]
    assert list(resolve_candidates(win, "app/m.mettle", [], "std", "")) == ["windows"]
    assert resolve_candidates(lin, "app/m.mettle", [], "std", "")["linux"][:2] == [
        "std/lin.linux.mettle", "std/lin.mettle"]


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_first_existing_candidate_is_the_module_the_compiler_loads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "std/io.mettle", "fn io_generic() { }")
    write(tmp_path, "std/io.linux.mettle", "fn io_linux() { }")
    write(tmp_path, "inc/util.mettle", "fn from_include() { }")
    write(tmp_path, "util.mettle", "fn from_cwd() { }")
    write(tmp_path, "app/near.mettle", "fn near() { }")
    entry = write(tmp_path, "app/main.mettle",
                  'import "std/io";\nimport "util";\nimport "near";\nfn main() -> int32 { }')
    loaded = {os.path.basename(m.path) for m in load_program(
        "app/main.mettle", ["inc"], "std", cwd=".").modules[:-1]}
    chosen = set()
    for imp in scan_imports(entry.read_text(), "app/main.mettle"):
        paths = resolve_candidates(imp, "app/main.mettle", ["inc"], "std", "")["linux"]
        chosen.add(os.path.basename(next(p for p in paths if os.path.isfile(p))))
    assert chosen == loaded == {"io.linux.mettle", "util.mettle", "near.mettle"}
    # util.mettle came from -I inc, not the current directory: the scanner kept the order.
    paths = resolve_candidates(scan_imports(entry.read_text(), "app/main.mettle")[1],
                               "app/main.mettle", ["inc"], "std", "")["linux"]
    assert next(p for p in paths if os.path.isfile(p)) == "inc/util.mettle"


def test_mettle_imports_prints_one_json_line_per_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.mettle", 'import "b";\n')
    write(tmp_path, "c.mettle", "fn c() { }\n")
    assert cli.main(["imports", "a.mettle", "c.mettle", "--stdlib", "lib"]) == 0
    a, c = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert a == {"file": "a.mettle", "imports": [{
        "path": "b", "line": 1, "column": 1, "guard": None,
        "candidates": {"linux": ["b.mettle", "b.mettle"], "windows": ["b.mettle", "b.mettle"]}}]}
    assert c == {"file": "c.mettle", "imports": []}
