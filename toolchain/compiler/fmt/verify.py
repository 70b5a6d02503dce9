"""The formatter's guarantee, checked on every output: same tokens, same syntax tree, same
comments in the same order. A layout that would read differently is refused (E0096), so
the formatter can be wrong about style but never about meaning. Also the list of syntax
the printer knows: anything newer is refused (E0095) rather than guessed at.
"""
from __future__ import annotations

from ..diagnostics import CompileError, Diagnostic, DiagnosticBag, Span
from ..frontend import ast as A
from ..frontend.lexer import tokenize
from ..frontend.parser import parse_tokens
from .trivia import scan_gaps

# The syntax-tree node classes the printer was written for.
KNOWN_NODES = frozenset("""
    AddrOf ArrayLit ArrayRepeat ArrayType Arrow Assign Attribute Barrier Binary Block BoolLit
    Break Call Cast ConstDecl Continue Deref Dispatch EnumDecl EnumVariant ExprStmt
    ExternKernel FloatLit FnDecl FnPtrType For ForRange If Import Index IntLit Member Module
    Name NamedType Param PointerType Return SizeOf StrLit StructDecl StructField StructLit
    Switch SwitchCase TupleExpr Unary VarDecl While
    """.split())
# Later-tier words: the parser may learn them before the printer does.
LATER_WORDS = frozenset(("trait", "impl", "where", "method", "match", "defer", "errdefer",
                         "asm", "new", "this", "import_str"))


def dump(node) -> list:
    """The syntax tree as a flat pre-order list of node names, field names and values,
    without source positions (iterative: a long `a + b + ...` chain is a deep tree)."""
    out: list = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            out.append(("list", len(n)))
            stack.extend(reversed(n))
        elif isinstance(n, tuple):
            if type(n).__name__ == "Span":
                continue
            out.append((type(n).__name__, len(n)))
            stack.extend(reversed(n))
        elif getattr(type(n), "__dataclass_fields__", None) is not None:
            names = [f for f in type(n).__dataclass_fields__ if f != "span"]
            out.append((type(n).__name__, tuple(names)))
            stack.extend(getattr(n, f) for f in reversed(names))
        else:
            out.append(n)
    return out


def unknown_syntax(module: A.Module, tokens) -> Diagnostic | None:
    """The first construct the printer does not know, as a diagnostic."""
    for t in tokens:
        if t.kind in LATER_WORDS:
            return _unknown(f"`{t.text}`", t.span)
    for i, t in enumerate(tokens[:-1]):
        if t.kind == "<" and i >= 2 and tokens[i - 2].kind in ("fn", "struct", "enum"):
            return _unknown("generic parameters", t.span)
    stack = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, tuple) and type(node).__name__ != "Span":
            stack.extend(node)
        elif isinstance(node, A.Node):
            name = type(node).__name__
            if name not in KNOWN_NODES:
                return _unknown(f"this syntax ({name})", node.span)
            stack.extend(getattr(node, f) for f in type(node).__dataclass_fields__
                         if f != "span")
    return None


def _unknown(what: str, span: Span) -> Diagnostic:
    return Diagnostic("E0095", f"the formatter cannot print {what} yet; the file is left "
                      "unchanged", span)


def check_output(path: str, tokens, module: A.Module, gaps, out: str) -> None:
    """Raise E0096 unless `out` has the tokens, the tree and the comments of the input."""
    bag = DiagnosticBag()
    out_tokens = tokenize(out, path, bag)
    where = _first_difference(tokens, out_tokens)
    if bag.error_count or where is not None:
        raise _changed(tokens[where if where is not None else 0].span, "its tokens")
    try:
        out_module = parse_tokens(out_tokens, path, bag)
    except CompileError:
        out_module = None
    if bag.error_count or out_module is None or dump(out_module) != dump(module):
        raise _changed(Span(path, 1, 1, 1), "how it parses")
    before = [c.text for g in gaps for c in g.comments]
    after = [c.text for g in scan_gaps(out, out_tokens) for c in g.comments]
    if before != after:
        raise _changed(Span(path, 1, 1, 1), "its comments")


def _first_difference(a, b) -> int | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x.kind != y.kind or x.text != y.text:
            return i
    return None if len(a) == len(b) else min(len(a), len(b)) - 1


def _changed(span: Span, what: str) -> CompileError:
    return CompileError(Diagnostic(
        "E0096", f"formatting would change {what}; the file is left unchanged", span,
        help="this is a formatter bug: please report it with the file"))
