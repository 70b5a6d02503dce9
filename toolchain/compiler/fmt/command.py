"""`mettle fmt [--check | --diff] FILE... | -`: the formatter's command line.

Without a flag each file is rewritten in place (atomically, only when it changes). `--check`
writes nothing and lists the files that would change; `--diff` prints a unified diff for
each instead. `-` formats standard input to standard output. A file with a syntax error gets
the compiler's located diagnostic and is never rewritten. A Markdown file (`.md`) has its
```mettle examples formatted (markdown.py).

Exit status: 0 all formatted (or rewritten), 1 a file would change (--check/--diff) or has
errors, 2 usage error, 70 a formatter bug (the file is left unchanged).
"""
from __future__ import annotations

import difflib
import os
import sys
import tempfile

from ..diagnostics import CompileError, Diagnostic, SourceMap, render_text
from .format import format_source
from .markdown import format_markdown

EXIT_INTERNAL = 70

USAGE = """usage: mettle fmt [--check | --diff] FILE... | -

Rewrite Mettle files in the canonical style (docs/reference/fmt.md).
  --check   write nothing; list the files that would change, exit 1 if any
  --diff    write nothing; print a unified diff of each change, exit 1 if any
  -         read standard input, write the formatted text to standard output
A FILE ending in .md has its ```mettle examples formatted (those that parse).
"""


def main(argv: list[str]) -> int:
    mode, files = "write", []
    for a in argv:
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if a in ("--check", "--diff"):
            if mode != "write" and mode != a[2:]:
                return _usage("--check and --diff exclude each other")
            mode = a[2:]
        elif a.startswith("-") and a != "-":
            return _usage(f"unknown option {a}")
        else:
            files.append(a)
    if not files:
        return _usage("no input file (use - for standard input)")
    status = 0
    try:
        for path in files:
            status = max(status, _one(path, mode))
    except BrokenPipeError:         # `mettle fmt --diff ... | head`: the reader left
        sys.stdout = open(os.devnull, "w")
    return status


def _usage(message: str) -> int:
    print(render_text(Diagnostic("E0090", f"usage: mettle fmt: {message}",
                                 help="mettle fmt --help")), file=sys.stderr)
    return 2


def _one(path: str, mode: str) -> int:
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.buffer.read().decode("utf-8")
        else:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8"
        _report([Diagnostic("E0102", f"cannot read '{name}': {why}")], None)
        return 1
    try:
        out = format_markdown(text, name) if name.endswith(".md") else \
            format_source(text, name)
    except CompileError as e:
        _report(e.diagnostics, (name, text))
        return 1
    except RecursionError:
        _report([Diagnostic("E0091", f"{name}: program nests too deeply to format")], None)
        return 1
    except Exception as e:  # a formatter bug: say so plainly, never a traceback
        _report([Diagnostic("E0900", f"internal formatter error on {name}: "
                            f"{type(e).__name__}: {e}", help="please report this with the "
                            "file; it was left unchanged")], None)
        return EXIT_INTERNAL
    if mode == "check":
        if out != text:
            print(name)
            return 1
        return 0
    if mode == "diff":
        if out != text:
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), out.splitlines(True), name, f"{name} (formatted)"))
            return 1
        return 0
    if path == "-":
        sys.stdout.write(out)
    elif out != text:
        try:
            _write_atomic(path, out)
        except OSError as e:
            _report([Diagnostic("E0092", f"cannot write {path}: {e.strerror}")], None)
            return 1
    return 0


def _write_atomic(path: str, text: str) -> None:
    """Replace `path` by `text` in one step, keeping its permissions."""
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fmt-", suffix=".mettle")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _report(diags: list[Diagnostic], source: tuple[str, str] | None) -> None:
    sources = SourceMap()
    if source is not None:
        sources.add(*source)
    for d in diags:
        print(render_text(d, sources), file=sys.stderr)
