"""Expression and type grammar of Mettle (LANGUAGE §2, §4), shared by the statement parser.

`ExprParser` owns the token cursor, error helpers and every expression/type rule; the
statement/declaration rules in parser.py subclass it. Each `parse_*` method is named after
the grammar rule written above it. See parser.py for the newline and cast rules.
"""
from __future__ import annotations

from . import ast as A
from ..diagnostics import CompileError, Span, error
from .tokens import BUILTIN_TYPE_NAMES, EOF, FLOAT, IDENT, INT, STRING, TYPE_KEYWORDS, Token

MAX_DEPTH = 250

# binary operator -> precedence (LANGUAGE §4; higher binds tighter, all left-assoc)
BINARY_PREC = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
    "<": 7, "<=": 7, ">": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
    "*": 10, "/": 10, "%": 10,
}
UNARY_OPS = frozenset(("-", "+", "~", "!", "*", "&"))
# keywords accepted as bare words in named-argument values (`space: workgroup`)
WORD_KEYWORDS = frozenset(("workgroup", "private", "default", "global"))
CAST_OPERAND_START = frozenset((IDENT, INT, FLOAT, STRING, "!", "~"))


def describe(tok: Token) -> str:
    if tok.kind == EOF:
        return "end of file"
    if tok.kind == STRING:
        return "a string literal"
    return f"'{tok.text}'"


class ExprParser:
    """Token cursor plus the expression and type rules."""

    def __init__(self, tokens: list[Token], path: str):
        self.toks, self.path = tokens, path
        self.i = 0
        self.depth = 0
        self.brackets = 0  # > 0 inside () [] {} of an expression: newlines do not matter
        self.split_gt = False   # an inner type-argument list consumed `>>` (both closes)
        self.speculative = False  # trying a call's type arguments: no parenthesized types
        self.embeds: list[A.ImportStr] = []     # `import_str` nodes, for embed.py

    # ------------------------------------------------------------ token helpers
    @property
    def tok(self) -> Token:
        # The expression rules below read `self.toks[self.i]` directly: they run once per
        # operand and precedence level, where the property call is measurable.
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind != EOF:
            self.i += 1
        return t

    def accept(self, kind: str) -> Token | None:
        return self.advance() if self.toks[self.i].kind == kind else None

    def expect(self, kind: str, what: str | None = None) -> Token:
        t = self.toks[self.i]
        if t.kind != kind:
            raise self.err(f"expected {what or repr(kind)}, found {describe(t)}", t)
        self.i += 1
        return t

    def err(self, msg: str, tok: Token) -> CompileError:
        return error("E0002", msg, tok.span)

    def unsupported(self, what: str, tok: Token) -> CompileError:
        return error("E0009", f"{what} is not supported yet", tok.span,
                     help="this compiler does not implement it; "
                          "`mettle explain E0009` says what to use instead")

    def refuse_increment(self, i: int) -> None:
        """`i++`, `++i`, `i--`, `--i`: C's increment spelled as two touching `+` (or `-`)
        tokens. Mettle has no such operator; say what to write instead."""
        t, u = self.toks[i], self.toks[i + 1]
        if t.kind in ("+", "-") and u.kind == t.kind and u.line == t.line and \
                u.col == t.col + 1:
            raise error("E0002", f"Mettle has no `{t.kind * 2}` operator",
                        Span(t.path, t.line, t.col, 2),
                        help=f"write `i = i {t.kind} 1;` (or `i {t.kind}= 1;`)")

    def span_from(self, start: Token) -> Span:
        """Span from `start` to the last consumed token (clipped to `start`'s line)."""
        last = self.toks[self.i - 1] if self.i > 0 else start
        if last.line == start.line and last.col >= start.col:
            return Span(start.path, start.line, start.col, last.col + last.length - start.col)
        return start.span

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.err("program is nested too deeply", self.tok)

    def in_brackets(self, fn, *args):
        """Run a sub-parser inside brackets, where line breaks never end anything."""
        self.brackets += 1
        try:
            return fn(*args)
        finally:
            self.brackets -= 1

    def end_stmt(self) -> None:
        t = self.tok
        if t.kind == ";":
            self.i += 1
        elif not (t.kind in ("}", EOF) or t.nl_before):
            raise self.err(f"expected ';' or a line break, found {describe(t)}", t)

    # ------------------------------------------------------------ types
    # type = base_type { "*" | "[" INT "]" }
    # base_type = TYPE_KEYWORD | IDENT ["." IDENT] | ("fn" | "Fn") "(" [types] ")" ["->" type]
    #           | "(" type ")"      (a function type's pointer or array: `(fn() -> int32)[4]`)
    def parse_type(self) -> A.TypeExpr:
        start = self.tok
        ty = self.parse_base_type()
        while not self.split_gt:        # after `>>`, a `*` or `[N]` is the outer type's
            t = self.tok
            if t.kind == "*":
                self.i += 1
                ty = A.PointerType(ty, span=self.span_from(start))
            elif t.kind == "[" and not t.nl_before:
                self.i += 1
                n = self.tok
                if n.kind != INT:
                    raise self.err("an array size must be a number token, found "
                                   f"{describe(n)}", n)
                self.i += 1
                self.expect("]")
                ty = A.ArrayType(ty, n.value, span=self.span_from(start))
            else:
                return ty
        return ty

    def parse_base_type(self) -> A.TypeExpr:
        t = self.tok
        if t.kind in TYPE_KEYWORDS:
            self.i += 1
            return A.NamedType(t.kind, span=t.span)
        if t.kind == "fn" or (t.kind == IDENT and t.text == "Fn" and self.peek().kind == "("):
            return self.parse_fn_type()
        if t.kind == "(" and not self.speculative:
            self.i += 1
            inner = self.parse_type()
            self.expect(")", "')' closing the parenthesized type")
            return inner
        if t.kind != IDENT:
            raise self.err(f"expected a type, found {describe(t)}", t)
        if t.text == "tile" and self.peek().kind == "<":
            return self.parse_tile_type()
        self.i += 1
        if self.tok.kind == "<":
            args = self.parse_type_args()
            return A.NamedType(t.text, args=args, span=self.span_from(t))
        if self.tok.kind == "." and self.peek().kind == IDENT:
            self.i += 1
            member = self.advance()
            return A.NamedType(member.text, t.text, span=self.span_from(t))
        return A.NamedType(t.text, span=t.span)

    # tile_type = "tile" "<" IDENT "," extent "," extent ">"; extent = INT | IDENT
    def parse_tile_type(self) -> A.TypeExpr:
        start = self.advance()
        self.expect("<")
        f = self.tok
        if f.kind != IDENT:
            raise self.err(f"expected a tile format (f16, bf16, f32), found {describe(f)}", f)
        self.i += 1
        extents: list[int | str] = []
        for _ in range(2):
            self.expect(",")
            x = self.tok
            if x.kind not in (INT, IDENT):
                raise self.err("a tile extent must be a number or a const name, found "
                               f"{describe(x)}", x)
            self.i += 1
            extents.append(x.value if x.kind == INT else x.text)
        self.expect(">", "'>'")
        return A.TileTypeExpr(f.text, extents[0], extents[1], span=self.span_from(start))

    # type_args = "<" type {"," type} ">"      (a `>>` closes two lists)
    def parse_type_args(self) -> list[A.TypeExpr]:
        self.expect("<")
        args: list[A.TypeExpr] = []
        while True:
            args.append(self.parse_type())
            if not self.accept(","):
                break
        if self.split_gt:                   # the inner list consumed `>>`
            self.split_gt = False
            return args
        t = self.tok
        if t.kind == ">>":
            self.i += 1
            self.split_gt = True            # the enclosing list's `>` is spent too
            return args
        self.expect(">", "'>' or ','")
        return args

    def try_call_type_args(self) -> list[A.TypeExpr] | None:
        """After a name, `<types>(` is a generic call's type arguments; anything else
        leaves the cursor alone (it is the less-than operator). No diagnostics remain."""
        saved = (self.i, self.depth, self.brackets, self.split_gt)
        self.speculative = True         # `a < (b) > (c)` stays two comparisons
        try:
            args = self.parse_type_args()
            if self.tok.kind == "(" and not self.split_gt:
                return args
        except CompileError:
            pass
        finally:
            self.speculative = False
        self.i, self.depth, self.brackets, self.split_gt = saved
        return None

    def parse_fn_type(self) -> A.FnPtrType:
        start = self.advance()
        self.expect("(")
        params = []
        if self.tok.kind != ")":
            while True:
                params.append(self.parse_type())
                if not self.accept(","):
                    break
        self.expect(")", "')' or ','")
        ret = None
        if self.accept("->"):
            ret = self.parse_type()
        return A.FnPtrType(params, ret, start.kind != "fn", span=self.span_from(start))

    # ------------------------------------------------------------ expressions
    # expr = binary(1)
    def parse_expr(self) -> A.Expr:
        return self.parse_binary(1)

    # expr_list = [expr { "," expr }]        (until `close`)
    def parse_expr_list(self, close: str) -> list[A.Expr]:
        items: list[A.Expr] = []
        if self.tok.kind == close:
            return items
        while True:
            items.append(self.parse_expr())
            if not self.accept(","):
                return items

    # binary(p) = cast { binop binary(prec(binop) + 1) }   for binop with prec >= p
    def parse_binary(self, min_prec: int) -> A.Expr:
        start = self.toks[self.i]
        self.enter()
        left = self.parse_cast()
        while True:
            t = self.toks[self.i]
            prec = BINARY_PREC.get(t.kind)
            if prec is None or prec < min_prec:
                break
            if t.kind == "*" and t.nl_before and not self.brackets:
                break  # `*p = v` on a new line is a new statement
            self.refuse_increment(self.i)
            self.i += 1
            right = self.parse_binary(prec + 1)
            left = A.Binary(t.kind, left, right, span=self.span_from(start))
        self.depth -= 1
        return left

    # cast = "(" type ")" cast | unary
    def parse_cast(self) -> A.Expr:
        t = self.toks[self.i]
        if t.kind == "(" and self.looks_like_cast():
            self.enter()
            self.i += 1
            ty = self.in_brackets(self.parse_type)
            self.expect(")", "')' closing the cast type")
            operand = self.parse_cast()
            self.depth -= 1
            return A.Cast(ty, operand, span=self.span_from(t))
        return self.parse_unary()

    def looks_like_cast(self) -> bool:
        t1 = self.peek()
        if t1.kind in TYPE_KEYWORDS or t1.kind == "fn":
            return True
        if t1.kind != IDENT:
            return False
        if t1.text == "Fn" and self.peek(2).kind == "(":
            return True
        j = self.i + 2
        if self.toks[j].kind == "." and self.toks[j + 1].kind == IDENT:
            j += 2
        modifiers = 0
        while True:
            k = self.toks[j].kind
            if k == "*":
                j, modifiers = j + 1, modifiers + 1
            elif k == "[" and self.toks[j + 1].kind == INT and self.toks[j + 2].kind == "]":
                j, modifiers = j + 3, modifiers + 1
            else:
                break
        if self.toks[j].kind != ")":
            return False
        if modifiers or t1.text in BUILTIN_TYPE_NAMES:
            return True
        after = self.toks[j + 1]
        return after.kind in CAST_OPERAND_START and not after.nl_before

    # unary = ("-" | "+" | "~" | "!" | "*" | "&") cast | postfix
    def parse_unary(self) -> A.Expr:
        t = self.toks[self.i]
        if t.kind not in UNARY_OPS:
            return self.parse_postfix()
        self.refuse_increment(self.i)
        self.i += 1
        if t.kind == "&":
            self.refuse_generic_address(t)
        self.enter()
        operand = self.parse_cast()
        self.depth -= 1
        span = self.span_from(t)
        if t.kind == "*":
            return A.Deref(operand, span=span)
        if t.kind == "&":
            return A.AddrOf(operand, span=span)
        return A.Unary(t.kind, operand, span=span)

    def refuse_generic_address(self, amp: Token) -> None:
        """`&id<int32>`: the address of a generic function cannot be taken (LANGUAGE-later
        4.1). Said plainly when the tokens after the name parse as type arguments that
        cannot be a comparison: a type keyword first, or nothing but an expression's end
        after the `>`. Anything else is left to the expression parser."""
        if self.tok.kind != IDENT or self.peek(1).kind != "<":
            return
        saved = (self.i, self.depth, self.brackets, self.split_gt)
        first = self.peek(2)
        self.i += 1
        try:
            self.parse_type_args()
            after = self.tok
        except CompileError:
            after = None
        span = self.span_from(amp)
        self.i, self.depth, self.brackets, self.split_gt = saved
        if after is None or after.kind == "(":
            return
        if first.text in TYPE_KEYWORDS or first.text in BUILTIN_TYPE_NAMES or \
                after.kind in (";", ")", ",", "]", "}"):
            name = self.tok.text
            raise error("E0002", f"the address of a generic function cannot be taken "
                        f"(`&{name}<...>`)", span,
                        help=f"wrap the instance in a lambda, `fn(x: T) -> R {{ return "
                             f"{name}<...>(x); }}`, or declare a non-generic function")

    # postfix = primary { "(" call_args ")" | "[" expr "]" | "." IDENT | "->" IDENT }
    def parse_postfix(self) -> A.Expr:
        start = self.toks[self.i]
        e = self.parse_primary()
        while True:
            t = self.toks[self.i]
            k = t.kind
            if k in ("(", "[") and t.nl_before and not self.brackets:
                return e  # a line starting with ( or [ is a new statement
            if k == "(":
                self.i += 1
                args, named = self.in_brackets(self.parse_call_args)
                self.expect(")", "')' or ','")
                e = A.Call(e, args, named, span=self.span_from(start))
            elif k == "[":
                self.i += 1
                idx = self.in_brackets(self.parse_expr)
                self.expect("]")
                e = A.Index(e, idx, span=self.span_from(start))
            elif k in (".", "->"):
                self.i += 1
                name = self.expect(IDENT, "a member name").text
                cls = A.Member if k == "." else A.Arrow
                e = cls(e, name, span=self.span_from(start))
            elif k == "<" and isinstance(e, A.Name):
                targs = self.try_call_type_args()
                if targs is None:
                    return e
                self.i += 1
                args, named = self.in_brackets(self.parse_call_args)
                self.expect(")", "')' or ','")
                e = A.Call(e, args, named, targs, span=self.span_from(start))
            else:
                return e

    # call_args = [arg { "," arg }]
    # arg = [(IDENT | keyword) ":"] expr      (named arguments come last)
    def parse_call_args(self) -> tuple[list[A.Expr], list[A.NamedArg]]:
        args: list[A.Expr] = []
        named: list[A.NamedArg] = []
        if self.tok.kind == ")":
            return args, named
        while True:
            t = self.tok
            if (t.kind == IDENT or t.text.isidentifier()) and self.peek().kind == ":":
                self.i += 2
                named.append(A.NamedArg(t.text, self.parse_named_value(), t.span))
            elif named:
                raise self.err("a positional argument cannot follow named arguments", t)
            else:
                args.append(self.parse_expr())
            if not self.accept(",") or self.tok.kind == ")":   # a trailing comma is allowed
                return args, named

    def parse_named_value(self) -> A.Expr:
        t = self.tok
        if t.kind in WORD_KEYWORDS and self.peek().kind in (",", ")"):
            self.i += 1
            return A.Name(t.text, span=t.span)
        return self.parse_expr()

    # primary = INT | FLOAT | STRING | "true" | "false" | "sizeof" "(" type ")" | IDENT
    #         | "(" expr ")" | "[" array_lit "]" | "{" struct_lit "}"
    def parse_primary(self) -> A.Expr:
        t = self.toks[self.i]
        k = t.kind
        if k == INT:
            self.i += 1
            return A.IntLit(t.value, span=t.span)
        if k == FLOAT:
            self.i += 1
            return A.FloatLit(t.value, t.text, span=t.span)
        if k == STRING:
            self.i += 1
            return A.StrLit(t.value, span=t.span)
        if k == IDENT:
            return self.parse_name(t)
        if k == "(":
            self.i += 1
            e = self.in_brackets(self.parse_expr)
            self.expect(")", "')'")
            return e
        if k == "[":
            return self.in_brackets(self.parse_array_lit)
        if k == "{":
            return self.in_brackets(self.parse_struct_lit)
        if k == "this":
            self.i += 1
            return A.Name("this", span=t.span)
        if k == "fn" and self.peek().kind == "(":
            self.i += 1
            saved, self.brackets = self.brackets, 0
            try:
                params, ret = self.parse_signature()
                if self.tok.kind != "{":
                    raise self.err(f"expected a lambda body ('{{'), found "
                                   f"{describe(self.tok)}", self.tok)
                body = self.parse_block()
            finally:
                self.brackets = saved
            return A.Lambda(params, ret, body, span=t.span)
        if k == "match":
            self.i += 1
            subject, arms = self.parse_match_rest(t, True)
            return A.MatchExpr(subject, arms, span=self.span_from(t))
        if k == "import_str":
            self.i += 1
            path = self.tok
            if path.kind != STRING:
                raise self.err(f"expected a string literal after 'import_str', found "
                               f"{describe(path)}", path)
            self.i += 1
            node = A.ImportStr(b"", path.value.decode("utf-8", "replace"),
                               span=self.span_from(t))
            self.embeds.append(node)
            return node
        if k == "new":
            self.i += 1
            ty = self.parse_type()
            return A.New(ty, span=self.span_from(t))
        raise self.err(f"expected an expression, found {describe(t)}", t)

    def parse_name(self, t: Token) -> A.Expr:
        self.i += 1
        if t.text in ("true", "false"):
            return A.BoolLit(t.text == "true", span=t.span)
        if t.text == "sizeof" and self.tok.kind == "(":
            self.i += 1
            ty = self.in_brackets(self.parse_type)
            self.expect(")", "')' closing sizeof")
            return A.SizeOf(ty, span=self.span_from(t))
        return A.Name(t.text, span=t.span)

    # match = "match" "(" expr ")" "{" { arm } "}"
    # arm = ("case" IDENT ["(" IDENT ")"] | "default") ":" (block | expr [","|";"])
    def parse_match_rest(self, kw: Token, as_expr: bool):
        if self.tok.kind != "(":
            raise self.err(f"expected '(' after 'match', found {describe(self.tok)}", self.tok)
        self.i += 1
        subject = self.in_brackets(self.parse_expr)
        self.expect(")", "')' closing the match subject")
        self.expect("{")
        saved, self.brackets = self.brackets, 0
        arms: list[A.MatchArm] = []
        while self.tok.kind != "}":
            t = self.tok
            variant = binding = None
            if t.kind == "default":
                self.i += 1
            elif t.kind == "case":
                self.i += 1
                variant = self.expect(IDENT, "a variant name").text
                if self.accept("("):
                    binding = self.expect(IDENT, "a binding name").text
                    self.expect(")", "')' closing the binding")
            else:
                raise self.err(f"expected 'case' or 'default' in a match, found "
                               f"{describe(t)}", t)
            self.expect(":", "':' after the match arm's pattern")
            if as_expr:
                body = self.in_brackets(self.parse_expr)
                if not self.accept(",") and not self.accept(";") and \
                        self.tok.kind != "}" and not self.tok.nl_before:
                    raise self.err(f"expected ',' or a line break between match arms, "
                                   f"found {describe(self.tok)}", self.tok)
            else:
                if self.tok.kind != "{":
                    raise self.err(f"expected '{{', found {describe(self.tok)} (a match "
                                   "arm's body is a block)", self.tok)
                body = self.parse_block()
            arms.append(A.MatchArm(variant, binding, body, span=t.span))
        self.brackets = saved
        self.expect("}")
        return subject, arms

    # array_lit = "[" [expr { "," expr } [","]] "]" | "[" expr ";" expr "]"
    def parse_array_lit(self) -> A.Expr:
        lb = self.expect("[")
        elems: list[A.Expr] = []
        if self.tok.kind != "]":
            first = self.parse_expr()
            if self.accept(";"):
                count = self.parse_expr()
                self.expect("]")
                return A.ArrayRepeat(first, count, span=self.span_from(lb))
            elems.append(first)
            while self.accept(",") and self.tok.kind != "]":
                elems.append(self.parse_expr())
        self.expect("]", "']' or ','")
        return A.ArrayLit(elems, span=self.span_from(lb))

    # struct_lit = "{" [IDENT ":" expr { "," IDENT ":" expr } [","]] "}"
    def parse_struct_lit(self) -> A.Expr:
        lb = self.expect("{")
        fields: list[A.FieldInit] = []
        while self.tok.kind != "}":
            name = self.expect(IDENT, "a field name or '}'")
            self.expect(":", "':' and the field value")
            fields.append(A.FieldInit(name.text, self.parse_expr(), name.span))
            if not self.accept(","):
                break
        self.expect("}", "'}' or ','")
        return A.StructLit(fields, span=self.span_from(lb))
