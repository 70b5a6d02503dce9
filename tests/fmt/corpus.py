"""The formatter's test corpus: every .mettle file of the repository and every ```mettle
block of the documentation that parses as a whole module (fragments are skipped: they are
statements shown out of context, and the formatter refuses them like the compiler does).
The error-code examples (tools/docs/error_examples/) that fail to parse on purpose are left
out too; test_idempotence checks the formatter refuses them with their own code."""
from __future__ import annotations

import re
from pathlib import Path

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend import parse_source

REPO = Path(__file__).resolve().parents[2]
_SKIP_DIRS = {".git", "dist", ".pants.d", "node_modules", "__pycache__"}
ERROR_EXAMPLES = "tools/docs/error_examples"
_BLOCK = re.compile(r"^```mettle([^\n]*)\n(.*?)^```", re.M | re.S)


def _all_mettle_files() -> list[Path]:
    return sorted(p for p in REPO.rglob("*.mettle")
                  if not _SKIP_DIRS.intersection(p.relative_to(REPO).parts))


def _parses(path: Path) -> bool:
    try:
        parse_source(path.read_text(encoding="utf-8"), str(path))
    except CompileError:
        return False
    return True


def syntax_error_examples() -> list[Path]:
    """The error-code examples that do not parse (each shows a syntax error on purpose)."""
    folder = REPO / ERROR_EXAMPLES
    return [p for p in _all_mettle_files() if folder in p.parents and not _parses(p)]


def mettle_files() -> list[Path]:
    """Every .mettle file but the syntax-error examples (any other file that does not parse
    stays in, so its tests fail)."""
    skip = set(syntax_error_examples())
    return [p for p in _all_mettle_files() if p not in skip]


def doc_blocks() -> list[tuple[str, str]]:
    """(name `docs/x.md:LINE`, source) for every documentation block that parses."""
    pages = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
    out = []
    for page in pages:
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            name = f"{page.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
            try:
                parse_source(m.group(2), name)
            except CompileError:
                continue
            out.append((name, m.group(2)))
    return out


def corpus() -> list[tuple[str, str]]:
    """(name, source) for every file and documentation block."""
    files = [(str(p.relative_to(REPO)), p.read_text(encoding="utf-8")) for p in mettle_files()]
    return files + doc_blocks()


def dedent(text: str) -> str:
    """The same program with every line's indentation removed (a layout to undo)."""
    return "\n".join(line.lstrip(" \t") for line in text.split("\n"))
