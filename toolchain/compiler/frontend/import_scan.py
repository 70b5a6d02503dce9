"""Which modules a `.mettle` file imports, without compiling it: the seam build tools use
(the Pants plugin's dependency inference runs it through `mettle imports FILE`).

    scan_imports(text, path) -> [ast.Import, ...]        every top-level import statement
    resolve_candidates(imp, importer, include_dirs, std_root, cwd)
        -> {"linux": [path, ...], "windows": [...]}      what the compiler would try, per OS

Invariants: the lexer tokenizes the file and the parser's own `parse_import` reads each
top-level `import` statement, so the scan accepts exactly the compiler's import syntax; a
statement that does not parse is left out (compiling the file reports it). Candidate paths
come from `modules.candidates`, the list `load_program` walks, so the first existing path
of a list is the file the compiler loads for that OS. An import guarded by one OS has no
candidates for the other.
"""
from __future__ import annotations

from . import ast as A
from ..diagnostics import CompileError, DiagnosticBag
from .modules import candidates
from .parser import Parser
from .tokens import EOF

TARGET_OSES = ("linux", "windows")


def scan_imports(text: str, path: str = "<input>") -> list[A.Import]:
    """Every import statement at the top level of `text` (not nested in braces), in order."""
    from .lexer import tokenize
    bag = DiagnosticBag()
    try:
        tokens = tokenize(text, path, bag)
    except CompileError:        # the lexer's error cap: what was lexed is still usable
        return []
    parser = Parser(tokens, path, DiagnosticBag())
    found: list[A.Import] = []
    depth = 0
    i = 0
    while tokens[i].kind != EOF:
        kind = tokens[i].kind
        if kind in ("(", "[", "{"):
            depth += 1
        elif kind in (")", "]", "}"):
            depth = max(0, depth - 1)
        elif kind == "import" and depth == 0:
            parser.depth = parser.brackets = 0
            parser.i = i
            try:
                found.append(parser.parse_import())
                i = parser.i
                continue
            except CompileError:
                pass
        i += 1
    return found


def resolve_candidates(imp: A.Import, importer: str, include_dirs, std_root: str,
                       cwd: str) -> dict[str, list[str]]:
    """The paths the compiler tries for `imp`, in order, for each OS it applies to."""
    return {os_name: candidates(imp.path, importer, include_dirs, std_root, cwd, os_name)
            for os_name in TARGET_OSES if imp.guard in (None, os_name)}


def scan_report(path: str, text: str, include_dirs=(), std_root: str = "std",
                cwd: str = "") -> dict:
    """`mettle imports`' JSON: each import's spelling, location and candidates per OS."""
    return {"file": path, "imports": [
        {"path": imp.path, "line": imp.span.line, "column": imp.span.col,
         "guard": imp.guard,
         "candidates": resolve_candidates(imp, path, include_dirs, std_root, cwd)}
        for imp in scan_imports(text, path)]}
