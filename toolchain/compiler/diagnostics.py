"""Located diagnostics shared by every compiler layer.

A diagnostic is data (code, message, span, help); rendering is separate so the CLI can
print text or JSON. Layers raise `CompileError` carrying diagnostics; nothing below the
driver prints. Code ranges:
  E0001-E0099 lexing/parsing      E0100-E0199 names, imports, declarations
  E0200-E0299 types/expressions   E0300-E0399 GPU source rules (kernels, built-ins, dispatch)
  E0400-E0499 shared IR verifiers E0500-E0599 target capability diagnostics
  E0600-E0699 linker              M01xx memory-safety analysis    E0900 internal error
"""
from __future__ import annotations

from collections import namedtuple

from ..records import dataclass, field     # (start-up: neither dataclasses nor typing)

MAX_ERRORS = 100


# A source location: file (str), line, col, length (int, default 1). A tuple, because the
# lexer makes one per token and speed matters. (collections.namedtuple, as typing.NamedTuple
# would make it, without importing typing.)
Span = namedtuple("Span", ("file", "line", "col", "length"), defaults=(1,))


def _span_str(self) -> str:
    return f"{self.file}:{self.line}:{self.col}"


Span.__str__ = _span_str


@dataclass
class Diagnostic:
    code: str
    message: str
    span: Span | None = None
    severity: str = "error"  # "error" | "warning" | "note"
    help: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        out: dict = {"severity": self.severity, "code": self.code, "message": self.message}
        if self.span is not None:
            out["file"], out["line"], out["column"] = self.span.file, self.span.line, self.span.col
        if self.help:
            out["help"] = self.help
        if self.notes:
            out["notes"] = list(self.notes)
        return out


class CompileError(Exception):
    """Raised by any layer with one or more error diagnostics."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


def error(code: str, message: str, span: Span | None = None,
          help: str | None = None) -> CompileError:
    """Build a one-diagnostic CompileError: `raise error("E0201", "...", span)`."""
    return CompileError(Diagnostic(code, message, span, "error", help))


def did_you_mean(names) -> str | None:
    """The help line naming suggestions: "did you mean `a`, `b` or `c`?" (None for none)."""
    shown = [f"`{n}`" for n in names]
    if not shown:
        return None
    return "did you mean " + (shown[0] if len(shown) == 1 else
                              ", ".join(shown[:-1]) + " or " + shown[-1]) + "?"


def closest(name: str, candidates) -> list[str]:
    """Up to three candidates close to `name` (difflib's ratio 0.75 or more), best first."""
    from difflib import get_close_matches
    return get_close_matches(name, sorted(candidates), n=3, cutoff=0.75)


class DiagnosticBag:
    """Collects diagnostics during a phase; stops the phase at MAX_ERRORS errors."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self._seen: set = set()
        self.error_count = 0        # items with severity "error" (add and rollback keep it)

    @staticmethod
    def _key(diag: Diagnostic) -> tuple:
        return (diag.code, diag.message, diag.severity, diag.span and
                (diag.span.file, diag.span.line, diag.span.col))

    def add(self, diag: Diagnostic) -> None:
        # The same message at the same place once: error recovery may meet a construct
        # twice (a declaration's type, resolved again to declare the name).
        key = self._key(diag)
        if key in self._seen:
            return
        self._seen.add(key)
        self.items.append(diag)
        self.error_count += diag.severity == "error"
        if self.error_count >= MAX_ERRORS:
            raise CompileError(self.items)

    def error(self, code: str, message: str, span: Span | None = None,
              help: str | None = None) -> None:
        self.add(Diagnostic(code, message, span, "error", help))

    def warning(self, code: str, message: str, span: Span | None = None,
                help: str | None = None) -> None:
        self.add(Diagnostic(code, message, span, "warning", help))

    def mark(self) -> int:
        """A point to roll back to: what a speculative attempt reports after it can be
        withdrawn (rollback), and then reported again for real."""
        return len(self.items)

    def rollback(self, mark: int) -> None:
        for d in self.items[mark:]:
            self._seen.discard(self._key(d))
            self.error_count -= d.severity == "error"
        del self.items[mark:]

    def extend(self, diags: list[Diagnostic]) -> None:
        for d in diags:
            self.add(d)

    def raise_if_errors(self) -> None:
        if self.error_count:
            raise CompileError(self.items)


class SourceMap:
    """File name -> text, used to render snippets."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def add(self, name: str, text: str) -> None:
        self.files[name] = text

    def line(self, name: str, line: int) -> str | None:
        text = self.files.get(name)
        if text is None:
            return None
        lines = text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None


def render_text(diag: Diagnostic, sources: SourceMap | None = None) -> str:
    out = [f"{diag.severity}[{diag.code}]: {diag.message}"]
    if diag.span is not None:
        out.append(f" --> {diag.span}")
        src = sources.line(diag.span.file, diag.span.line) if sources else None
        if src is not None:
            gutter = str(diag.span.line)
            pad = " " * len(gutter)
            caret = " " * (diag.span.col - 1) + "^" * max(1, diag.span.length)
            out += [f"{pad} |", f"{gutter} | {src.expandtabs(1)}", f"{pad} | {caret}"]
    for note in diag.notes:
        out.append(f"note: {note}")
    if diag.help:
        out.append(f"help: {diag.help}")
    return "\n".join(out)


def render_json(diags: list[Diagnostic]) -> str:
    import json     # here, not at the top: only --error-format=json needs it
    return json.dumps({"diagnostics": [d.to_json() for d in diags]}, sort_keys=True)
