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

# The syntax-tree node classes the printer was written for, with their fields. A node of
# another class, or a field not listed here holding a value, is syntax the printer has not
# seen (a later parser may add a field, as generics added `type_params` to FnDecl).
_KNOWN = """
    AddrOf: ty operand | ArrayLit: ty elems | ArrayRepeat: ty value count
    ArrayType: elem size | Arrow: ty base name | Assign: op target value
    Attribute: name args | Barrier: regions order | Binary: ty op left right
    Block: stmts | BoolLit: ty value | Break: label | Call: ty callee args named_args type_args
    Cast: ty type expr | Continue: label | Defer: stmt is_err | Deref: ty operand
    Dispatch: kernel args named grid block shared stream work on_stream
    EnumDecl: name variants exported internal_name type_params
    EnumVariant: name value payload | ExprStmt: expr | FloatLit: ty value text
    For: init cond step body label attrs
    FnDecl: name params ret body is_kernel kernel_block kernel_per decorators exported
        is_extern link_name internal_name type_params
    ExternKernel: name params ret body is_kernel kernel_block kernel_per decorators
        exported is_extern link_name internal_name type_params
    FnPtrType: params ret is_closure | ForRange: var type lo hi inclusive body label attrs
    If: cond then else_ | ImplDecl: trait for_type methods trait_span
    Import: path alias names guard | ImportStr: ty value path | Index: ty base index
    IntLit: ty value | Lambda: ty params ret body | Match: subject arms
    MatchArm: variant binding body | MatchExpr: ty subject arms | Member: ty base name
    Module: items path embeds | Name: ty name | NamedType: name qualifier args | New: ty type
    Param: name type | PointerType: elem | Return: value
    SizeOf: ty type | StaticAssert: args | StrLit: ty value
    StructDecl: name fields exported internal_name methods type_params
    StructField: name type | StructLit: ty fields | Switch: subject cases
    SwitchCase: values ranges body is_default | TileTypeExpr: format rows columns
    TraitDecl: name methods exported
    TupleExpr: ty elems | TypeParam: name bounds
    Unary: ty op operand | While: cond body label attrs
    VarDecl: name type init is_const storage is_global exported is_extern link_name
        internal_name
    ConstDecl: name type init is_const storage is_global exported is_extern link_name
        internal_name
    """


def _known_fields(text: str) -> dict[str, frozenset]:
    """`Name: field field ...` entries (a word ending in `:` starts one; `|` is spacing)."""
    out: dict[str, set] = {}
    current: set = set()
    for word in text.replace("|", " ").split():
        if word.endswith(":"):
            current = out.setdefault(word[:-1], set())
        else:
            current.add(word)
    return {name: frozenset(fields) for name, fields in out.items()}


KNOWN_FIELDS = _known_fields(_KNOWN)

# Words the parser may learn before the printer does (`asm` is refused by the parser today).
LATER_WORDS = frozenset(("asm",))


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
    stack = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, tuple) and type(node).__name__ != "Span":
            stack.extend(node)
        elif isinstance(node, A.Node):
            name = type(node).__name__
            known = KNOWN_FIELDS.get(name)
            fields = [f for f in type(node).__dataclass_fields__ if f != "span"]
            if known is None or any(getattr(node, f) not in (None, [], (), False, "", "none")
                                    for f in fields if f not in known):
                return _unknown(f"this syntax ({name})", node.span)
            stack.extend(getattr(node, f) for f in fields)
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
