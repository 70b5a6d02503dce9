"""Recursive-descent parser for Mettle (LANGUAGE §3-§6, §9, §11; gpu.md; the later tier:
generics, traits, impls, methods, tagged enums, match, defer, lambdas, new, import_str).

Each `parse_*` method is named after the grammar rule written in the comment above it.

Invariants and design decisions:
- Statements end with `;` or a line break: a statement is complete when the next token is
  `;` (consumed), `}`, end of file, or starts on a later line. Expressions are otherwise
  greedy across lines, except that at bracket depth 0 a `(`, `[` or binary `*` that starts
  a new line begins a new statement (`f()` NL `*p = 1`), as it would in C.
- Assignment is a statement (`x = y = 1` is E0002 at the second `=`).
- `(T)e` is a cast when the parenthesised tokens must be a type (a type keyword, `fn`,
  a name followed by `*` or `[N]`, or bool/cstring/void), or when a bare name in
  parentheses is followed by a token that can only start an operand (name, literal, `!`,
  `~`). `(a) - b` stays a subtraction and `(f)(x)` a call.
- After a name, `<` starts type arguments only when the tokens up to a matching `>` parse
  as types and `(` follows (a speculative parse that leaves no diagnostics); otherwise it
  is less-than. In type position a `>>` closes two argument lists.
- `match` at the start of a statement is the statement form (block arms); anywhere an
  expression starts it is the expression form (one expression per arm).
- Errors: E0002 syntax (located at the offending token), E0003 `var` without a type or a
  local `const` without a type, E0009 inline `asm` ("not supported yet"). The parser
  recovers at statement and item boundaries and reports up to MAX_ERRORS diagnostics.
- Nesting deeper than MAX_DEPTH is a located E0002 rather than a Python RecursionError.
"""
from __future__ import annotations

import sys

from . import ast as A
from ..diagnostics import MAX_ERRORS, CompileError, DiagnosticBag, Span, error
from .expr_parser import ExprParser, describe
from .tokens import ASSIGN_OPS, EOF, IDENT, INT, STRING, Token

_RECURSION_LIMIT = 6000  # MAX_DEPTH nesting units take at most ~4 frames each
ORDERS = frozenset(("acquire", "release", "acq_rel", "seq_cst"))
REGIONS = frozenset(("workgroup", "global"))
ITEM_START = frozenset(("fn", "kernel", "extern", "export", "var", "const", "struct",
                        "enum", "import", "@", "trait", "impl"))
LATER_STMTS = {"asm": "inline `asm`"}


class Parser(ExprParser):
    """Parses one token list into an `ast.Module`; diagnostics go into `bag`."""

    def __init__(self, tokens: list[Token], path: str, bag: DiagnosticBag):
        super().__init__(tokens, path)
        self.bag = bag

    # ------------------------------------------------------------ recovery
    def record(self, e: CompileError) -> None:
        """Keep a caught error's diagnostics; once the bag is full, stop parsing."""
        if self.bag.error_count >= MAX_ERRORS:
            raise e
        self.bag.extend(e.diagnostics)

    def sync(self, start: int, stop_kinds: frozenset | None) -> None:
        """Skip to a boundary after an error: `;` (consumed), a `}` closing the current
        block (kept), or a line-starting token (in `stop_kinds` when given) at depth 0."""
        depth = 0
        while True:
            t = self.tok
            if t.kind == EOF:
                return
            moved = self.i > start
            if depth == 0:
                if t.kind == ";":
                    self.i += 1
                    return
                if t.kind == "}" and (stop_kinds is None or moved):
                    if stop_kinds is not None:
                        self.i += 1  # an item-level stray `}` is dropped
                    return
                if moved and t.nl_before and (stop_kinds is None or t.kind in stop_kinds):
                    return
            if t.kind in ("(", "[", "{"):
                depth += 1
            elif t.kind in (")", "]", "}"):
                depth = max(0, depth - 1)
            self.i += 1

    # ------------------------------------------------------------ module / items
    # module = { item } EOF
    def parse_module(self) -> A.Module:
        items: list[A.Stmt] = []
        while self.tok.kind != EOF:
            start = self.i
            try:
                items.append(self.parse_item())
            except CompileError as e:
                self.record(e)
                self.depth = self.brackets = 0
                self.sync(start, ITEM_START)
        return A.Module(items, self.path, self.embeds, span=Span(self.path, 1, 1, 1))

    # item = { attribute } ["export"] (fn_decl | kernel_decl | extern_decl | var_decl
    #        | const_decl | struct_decl | enum_decl) | import_decl
    def parse_item(self) -> A.Stmt:
        decos = self.parse_attributes()
        exported = self.accept("export") is not None
        t = self.tok
        if decos and t.kind not in ("fn", "kernel"):
            raise self.err("decorators apply only to functions and kernels", t)
        if t.kind == "import":
            if exported:
                raise self.err("an import cannot be exported", t)
            return self.parse_import()
        if t.kind == "fn":
            return self.parse_fn(decos, exported)
        if t.kind == "kernel":
            return self.parse_kernel(decos, exported, None)
        if t.kind == "extern":
            return self.parse_extern(exported)
        if t.kind in ("var", "const"):
            decl = self.parse_var(is_global=True)
            decl.exported = exported
            return decl
        if t.kind == "struct":
            return self.parse_struct(exported)
        if t.kind == "enum":
            return self.parse_enum(exported)
        if t.kind == IDENT and t.text == "static_assert" and self.peek().kind == "(":
            return self.parse_static_assert()
        if t.kind == "trait":
            return self.parse_trait(exported)
        if t.kind == "impl":
            if exported:
                raise self.err("an impl cannot be exported (export the trait or type)", t)
            return self.parse_impl()
        if t.kind in ("defer", "errdefer"):
            raise error("E0010", f"{t.kind} statement outside of a function", t.span)
        if t.kind in ("method", "where"):
            raise self.err(f"'{t.kind}' is only allowed inside a struct or after a "
                           "signature", t)
        if t.kind in ("workgroup", "private"):
            raise self.err(f"`{t.kind} var` is only allowed inside a kernel body", t)
        raise self.err(f"expected a declaration, found {describe(t)}", t)

    # attribute = "@" IDENT ["!"] ["(" INT { "," INT } ")"]
    def parse_attributes(self) -> list[A.Attribute]:
        attrs = []
        while self.tok.kind == "@":
            at = self.advance()
            name = self.expect(IDENT, "an attribute name").text
            bang = self.tok
            if bang.kind == "!" and not bang.nl_before:
                self.i += 1
                name += "!"
            args = []
            if self.tok.kind == "(" and not self.tok.nl_before:
                self.i += 1
                while True:
                    args.append(self.expect(INT, "an integer attribute argument").value)
                    if not self.accept(","):
                        break
                self.expect(")")
            attrs.append(A.Attribute(name, args, span=self.span_from(at)))
        return attrs

    # import_decl = "import" ( STRING ["as" IDENT]
    #               | "{" IDENT { "," IDENT } "}" "from" STRING ) ["if" IDENT] end
    def parse_import(self) -> A.Import:
        kw = self.expect("import")
        alias, names = None, None
        if self.accept("{"):
            names = []
            while True:
                n = self.expect(IDENT, "an imported name")
                names.append(A.ImportName(n.text, n.span))
                if not self.accept(","):
                    break
            self.expect("}")
            self.expect_word("from")
            path = self.expect(STRING, "a module path string")
        else:
            path = self.expect(STRING, "a module path string")
            if self.tok.kind == IDENT and self.tok.text == "as":
                self.i += 1
                alias = self.expect(IDENT, "an alias name").text
        guard = None
        if self.accept("if"):
            g = self.expect(IDENT, "an import guard (linux or windows)")
            if g.text not in ("linux", "windows"):
                raise self.err(f"unknown import guard '{g.text}' (expected linux or windows)",
                               g)
            guard = g.text
        span = self.span_from(kw)
        self.end_stmt()
        text = path.value.decode("utf-8", "replace")
        return A.Import(text, alias, names, guard, span=span)

    def expect_word(self, word: str) -> Token:
        t = self.tok
        if t.kind != IDENT or t.text != word:
            raise self.err(f"expected '{word}', found {describe(t)}", t)
        self.i += 1
        return t

    # fn_decl = "fn" IDENT "(" params ")" [("->" | ":") type] ["=" STRING] (block | end)
    def parse_fn(self, decos: list[A.Attribute], exported: bool) -> A.FnDecl:
        self.expect("fn")
        name = self.expect(IDENT, "a function name")
        tparams = self.parse_type_params() if self.tok.kind == "<" else []
        params, ret = self.parse_signature()
        if self.tok.kind == "where":
            self.parse_where(tparams)
        link = None
        if self.tok.kind == "=" and not tparams:       # fn f(...) = "symbol" { ... }
            link = self.parse_link_name()
        body = self.parse_fn_body()
        return A.FnDecl(name.text, params, ret, body, decorators=decos, exported=exported,
                        type_params=tparams, link_name=link, span=name.span)

    # type_params = "<" IDENT [":" IDENT {"+" IDENT}] {"," ...} ">"
    def parse_type_params(self) -> list[A.TypeParam]:
        self.expect("<")
        out: list[A.TypeParam] = []
        while True:
            n = self.expect(IDENT, "a type parameter name")
            if any(p.name == n.text for p in out):
                raise self.err(f"duplicate type parameter '{n.text}'", n)
            p = A.TypeParam(n.text, span=n.span)
            if self.accept(":"):
                p.bounds = self.parse_bounds()
            out.append(p)
            if not self.accept(","):
                break
        self.expect(">", "'>' or ','")
        return out

    def parse_bounds(self) -> list[str]:
        bounds = [self.expect(IDENT, "a trait name").text]
        while self.accept("+"):
            bounds.append(self.expect(IDENT, "a trait name").text)
        return bounds

    # where = "where" IDENT ":" bounds {"," IDENT ":" bounds}
    def parse_where(self, tparams: list[A.TypeParam]) -> None:
        self.expect("where")
        while True:
            n = self.expect(IDENT, "a type parameter name")
            p = next((p for p in tparams if p.name == n.text), None)
            if p is None:
                raise error("E0018", f"where clause references unknown type parameter "
                            f"'{n.text}'", n.span)
            self.expect(":", "':' and the trait bounds")
            p.bounds += self.parse_bounds()
            if not self.accept(","):
                return

    # trait_decl = "trait" IDENT (";" | "{" { "fn" IDENT signature ";" } "}")
    def parse_trait(self, exported: bool) -> A.TraitDecl:
        self.expect("trait")
        name = self.expect(IDENT, "a trait name")
        methods: list[A.FnDecl] = []
        if self.tok.kind != "{":
            self.end_stmt()
            return A.TraitDecl(name.text, methods, exported, span=name.span)
        self.expect("{")
        while self.tok.kind != "}":
            if self.tok.kind != "fn":
                raise self.err("expected a function signature in a trait declaration, "
                               f"found {describe(self.tok)}", self.tok)
            self.i += 1
            m = self.expect(IDENT, "a method name")
            params, ret = self.parse_signature()
            if self.tok.kind == "{":
                raise self.err("trait method declarations must not have a body", self.tok)
            self.end_stmt()
            methods.append(A.FnDecl(m.text, params, ret, None, span=m.span))
        self.expect("}")
        return A.TraitDecl(name.text, methods, exported, span=name.span)

    # impl_decl = "impl" IDENT "for" type (";" | "{" { fn_decl } "}")
    def parse_impl(self) -> A.ImplDecl:
        kw = self.expect("impl")
        trait = self.expect(IDENT, "a trait name")
        if self.tok.kind != "for":
            raise self.err(f"expected 'for' after the trait name in an impl, found "
                           f"{describe(self.tok)}", self.tok)
        self.i += 1
        for_type = self.parse_type()
        methods: list[A.FnDecl] = []
        if self.tok.kind != "{":
            self.end_stmt()
            return A.ImplDecl(trait.text, for_type, methods, trait.span, span=kw.span)
        self.expect("{")
        while self.tok.kind != "}":
            decos = self.parse_attributes()
            if self.tok.kind != "fn":
                raise self.err(f"expected 'fn' in an impl, found {describe(self.tok)}",
                               self.tok)
            f = self.parse_fn(decos, False)
            if f.body is None:
                raise error("E0002", "impl method declarations must have a body", f.span)
            methods.append(f)
        self.expect("}")
        return A.ImplDecl(trait.text, for_type, methods, trait.span, span=kw.span)

    def parse_fn_body(self) -> A.Block | None:
        if self.tok.kind == "{":
            return self.parse_block()
        self.end_stmt()
        return None

    # signature = "(" [param { "," param }] ")" [("->" | ":") type]
    # param = IDENT ":" type
    def parse_signature(self) -> tuple[list[A.Param], A.TypeExpr | None]:
        self.expect("(")
        params = []
        if self.tok.kind != ")":
            while True:
                n = self.expect(IDENT, "a parameter name")
                self.expect(":", "':' and the parameter type")
                params.append(A.Param(n.text, self.parse_type(), span=n.span))
                if not self.accept(","):
                    break
        self.expect(")", "')' or ','")
        ret = None
        if self.tok.kind in ("->", ":"):
            self.i += 1
            ret = self.parse_type()
        return params, ret

    # kernel_decl = "kernel" [kernel_attrs] IDENT signature (block | end)
    def parse_kernel(self, decos, exported, extern_tok: Token | None) -> A.FnDecl:
        self.expect("kernel")
        block, per = self.parse_kernel_attrs()
        name = self.expect(IDENT, "a kernel name")
        params, ret = self.parse_signature()
        if extern_tok is not None:
            self.end_stmt()
            return A.ExternKernel(name.text, params, ret, None, kernel_block=block,
                                  kernel_per=per, exported=exported, span=name.span)
        body = self.parse_fn_body()
        return A.FnDecl(name.text, params, ret, body, is_kernel=True, kernel_block=block,
                        kernel_per=per, decorators=decos, exported=exported, span=name.span)

    # kernel_attrs = "(" kernel_attr { "," kernel_attr } ")"
    # kernel_attr = "block" "=" (dim | "(" dim { "," dim } ")") | "per" "=" IDENT
    # dim = INT | IDENT   (a top-level integer const)
    def parse_kernel_attrs(self):
        block, per = None, None
        if not self.accept("("):
            return block, per
        while True:
            key = self.expect(IDENT, "'block' or 'per'")
            self.expect("=")
            if key.text == "block" and block is None:
                block = self.parse_block_shape()
            elif key.text == "per" and per is None:
                per = self.expect(IDENT, "a work-item granularity such as 'warp'").text
            else:
                raise self.err(f"unexpected kernel attribute '{key.text}'", key)
            if not self.accept(","):
                break
        self.expect(")", "')' or ','")
        return block, per

    def parse_block_shape(self) -> tuple:
        """Each dimension an integer, or the name of a top-level integer const
        (kernel_block.py replaces it before checking)."""
        if not self.accept("("):
            return (self.parse_block_dim("a block size"), 1, 1)
        dims = [self.parse_block_dim("a block dimension")]
        while self.accept(",") and len(dims) < 3:
            dims.append(self.parse_block_dim("a block dimension"))
        self.expect(")", "')' closing the block shape (at most 3 dimensions)")
        return tuple(dims + [1] * (3 - len(dims)))

    def parse_block_dim(self, what: str):
        if self.tok.kind == IDENT:
            t = self.expect(IDENT, what)
            return A.Name(t.text, span=t.span)
        return self.expect(INT, what + " (an integer or a const name)").value

    # extern_decl = "extern" ( "fn" IDENT signature ["=" STRING]
    #               | "kernel" [kernel_attrs] IDENT signature
    #               | "var" IDENT ":" type ["=" STRING] ) end
    def parse_extern(self, exported: bool) -> A.Stmt:
        kw = self.expect("extern")
        t = self.tok
        if t.kind == "kernel":
            return self.parse_kernel([], exported, kw)
        if t.kind == "fn":
            self.i += 1
            name = self.expect(IDENT, "a function name")
            params, ret = self.parse_signature()
            link = self.parse_link_name()
            self.end_stmt()
            return A.FnDecl(name.text, params, ret, None, exported=exported, is_extern=True,
                            link_name=link, span=name.span)
        if t.kind == "var":
            self.i += 1
            name = self.expect(IDENT, "a variable name")
            self.expect(":", "':' and the variable type")
            ty = self.parse_type()
            link = self.parse_link_name()
            self.end_stmt()
            return A.VarDecl(name.text, ty, None, is_global=True, exported=exported,
                             is_extern=True, link_name=link, span=name.span)
        raise self.err(f"expected 'fn', 'kernel' or 'var' after 'extern', found {describe(t)}",
                       t)

    def parse_link_name(self) -> str | None:
        if not self.accept("="):
            return None
        return self.expect(STRING, "a link name string").value.decode("utf-8", "replace")

    # var_decl = ["workgroup" | "private"] "var" IDENT ":" type ["=" init] end
    # const_decl = "const" IDENT [":" type] "=" init end
    def parse_var(self, is_global: bool, storage: str = "none") -> A.VarDecl:
        kw = self.advance()
        is_const = kw.kind == "const"
        name = self.expect(IDENT, "a name")
        ty = None
        if self.accept(":"):
            ty = self.parse_type()
        elif not is_const:
            self.bag.error("E0003", f"variable '{name.text}' needs an explicit type",
                           name.span, help=f"write `var {name.text}: T = ...`")
        elif not is_global:
            self.bag.error("E0003", f"local const '{name.text}' needs an explicit type",
                           name.span)
        init = None
        if self.tok.kind == "=" or is_const:
            self.expect("=", "'=' and the constant value")
            init = self.parse_init()
        self.end_stmt()
        cls = A.ConstDecl if is_const else A.VarDecl
        return cls(name.text, ty, init, storage=storage, is_global=is_global, span=name.span)

    # init = array_lit | struct_lit | expr      (aggregates parse in parse_primary)
    def parse_init(self) -> A.Expr:
        return self.parse_expr()

    # struct_decl = "struct" IDENT "{" { IDENT ":" type (";" | "," | line break) } "}"
    def parse_struct(self, exported: bool) -> A.StructDecl:
        self.expect("struct")
        name = self.expect(IDENT, "a struct name")
        tparams = self.parse_type_params() if self.tok.kind == "<" else []
        if self.tok.kind == "where":
            self.parse_where(tparams)
        self.expect("{")
        fields = []
        methods: list[A.FnDecl] = []
        while self.tok.kind != "}":
            if self.tok.kind == "method":
                self.i += 1
                m = self.expect(IDENT, "a method name")
                params, ret = self.parse_signature()
                if self.tok.kind != "{":
                    raise self.err(f"expected a method body ('{{'), found "
                                   f"{describe(self.tok)}", self.tok)
                methods.append(A.FnDecl(m.text, params, ret, self.parse_block(),
                                        span=m.span))
                self.accept(";")
                continue
            if self.tok.kind == "fn":
                raise self.err("a struct member function is written 'method name(...)'",
                               self.tok)
            f = self.expect(IDENT, "a field name or '}'")
            self.expect(":", "':' and the field type")
            fields.append(A.StructField(f.text, self.parse_type(), span=f.span))
            if not self.accept(",") and self.tok.kind != "}":
                self.end_stmt()
        self.expect("}")
        return A.StructDecl(name.text, fields, exported=exported, methods=methods,
                            type_params=tparams, span=name.span)

    # enum_decl = "enum" IDENT "{" [variant { ("," | line break) variant } [","]] "}"
    # variant = IDENT ["=" expr]
    def parse_enum(self, exported: bool) -> A.EnumDecl:
        self.expect("enum")
        name = self.expect(IDENT, "an enum name")
        tparams = self.parse_type_params() if self.tok.kind == "<" else []
        self.expect("{")
        variants = []
        while self.tok.kind != "}":
            v = self.expect(IDENT, "a variant name or '}'")
            payload = None
            if self.accept("("):
                payload = self.in_brackets(self.parse_type)
                self.expect(")", "')' closing the variant's payload type")
            value = self.in_brackets(self.parse_expr) if self.accept("=") else None
            variants.append(A.EnumVariant(v.text, value, payload, span=v.span))
            if not self.accept(",") and not self.tok.nl_before and self.tok.kind != "}":
                raise self.err(f"expected ',' or '}}', found {describe(self.tok)}", self.tok)
        self.expect("}")
        return A.EnumDecl(name.text, variants, exported=exported, type_params=tparams,
                          span=name.span)

    # ------------------------------------------------------------ statements
    # block = "{" { statement } "}"
    def parse_block(self) -> A.Block:
        lb = self.expect("{")
        self.enter()
        level = self.depth
        saved, self.brackets = self.brackets, 0
        stmts: list[A.Stmt] = []
        while self.tok.kind not in ("}", EOF):
            start = self.i
            try:
                stmts.append(self.parse_statement())
            except CompileError as e:
                self.record(e)
                self.depth, self.brackets = level, 0
                self.sync(start, None)
        self.brackets = saved
        self.depth -= 1
        self.expect("}", "'}' closing the block")
        return A.Block(stmts, span=lb.span)

    # statement = block | var_decl | const_decl | if_stmt | loop | switch_stmt
    #           | "break" [IDENT] end | "continue" [IDENT] end | "return" [expr] end
    #           | dispatch_stmt | barrier_stmt | IDENT ":" loop | simple_stmt
    def parse_statement(self) -> A.Stmt:
        t = self.tok
        k = t.kind
        if k == "{":
            return self.parse_block()
        if k in ("var", "const"):
            return self.parse_var(is_global=False)
        if k in ("workgroup", "private"):
            self.i += 1
            if self.tok.kind != "var":
                raise self.err(f"expected 'var' after '{k}', found {describe(self.tok)}",
                               self.tok)
            return self.parse_var(is_global=False, storage=k)
        if k == "if":
            return self.parse_if()
        if k in ("while", "for", "@"):
            return self.parse_loop(None)
        if k == IDENT and self.peek().kind == ":" and self.peek(2).kind in ("while", "for",
                                                                            "@"):
            self.i += 2
            return self.parse_loop(t)
        if k == "switch":
            return self.parse_switch()
        if k in ("defer", "errdefer"):
            return self.parse_defer()
        if k == "match":
            kw = self.advance()
            subject, arms = self.parse_match_rest(kw, False)
            return A.Match(subject, arms, span=kw.span)
        if k in ("break", "continue"):
            return self.parse_jump()
        if k == "return":
            return self.parse_return()
        if k == "dispatch":
            return self.parse_dispatch()
        if k == "barrier":
            return self.parse_barrier()
        if k == IDENT and t.text == "static_assert" and self.peek().kind == "(":
            return self.parse_static_assert()
        if k in LATER_STMTS:
            raise self.unsupported(LATER_STMTS[k], t)
        if k in ("fn", "kernel", "struct", "enum", "import", "extern", "export"):
            if k == "fn" and self.peek().kind == "(":
                return self.parse_simple_stmt()     # a lambda called in place
            raise self.err(f"'{k}' declarations are only allowed at the top level", t)
        return self.parse_simple_stmt()

    # simple_stmt = expr [assign_op expr] end
    def parse_simple_stmt(self) -> A.Stmt:
        start = self.tok
        target = self.parse_expr()
        op = self.tok
        if op.kind not in ASSIGN_OPS:
            stmt: A.Stmt = A.ExprStmt(target, span=self.span_from(start))
        else:
            self.i += 1
            value = self.parse_expr()
            stmt = A.Assign(op.kind, target, value, span=self.span_from(start))
            if self.tok.kind in ASSIGN_OPS:
                raise self.err("assignment is a statement, not an expression",
                               self.tok)
        self.end_stmt()
        return stmt

    # defer_stmt = ("defer" | "errdefer") (block end | call end | assignment end)
    def parse_defer(self) -> A.Defer:
        kw = self.advance()
        what = "deferred" if kw.kind == "defer" else "errdeferred"
        if self.tok.kind in (";", "}", EOF) or self.tok.nl_before:
            raise self.err(f"expected a statement after '{kw.kind}'", self.tok)
        if self.tok.kind == "{":
            stmt: A.Stmt = self.parse_block()
            self.end_stmt()
        else:
            start = self.tok
            stmt = self.parse_simple_stmt()
            if not (isinstance(stmt, A.Assign) or
                    isinstance(stmt, A.ExprStmt) and isinstance(stmt.expr, A.Call)):
                raise error("E0010", f"{what} statement must be a function call, "
                            "assignment, or block", start.span)
        return A.Defer(stmt, kw.kind == "errdefer", span=kw.span)

    # static_assert = "static_assert" "(" call_args ")" end
    def parse_static_assert(self) -> A.StaticAssert:
        kw = self.advance()
        self.expect("(")
        args, named = self.in_brackets(self.parse_call_args)
        if named:
            raise self.err("static_assert takes no named arguments", self.tok)
        self.expect(")", "')' or ','")
        self.end_stmt()
        return A.StaticAssert(args, span=kw.span)

    # if_stmt = "if" "(" expr ")" body ["else" (if_stmt | body)]
    def parse_if(self) -> A.If:
        kw = self.expect("if")
        cond = self.parse_condition()
        then = self.parse_body()
        else_ = None
        if self.accept("else"):
            else_ = self.parse_if() if self.tok.kind == "if" else self.parse_body()
        return A.If(cond, then, else_, span=kw.span)

    def parse_condition(self) -> A.Expr:
        self.expect("(", "'(' (conditions are parenthesised)")
        cond = self.in_brackets(self.parse_expr)
        self.expect(")", "')' closing the condition")
        return cond

    # body = block | statement        (a lone statement is wrapped in a Block)
    def parse_body(self) -> A.Block:
        if self.tok.kind == "{":
            return self.parse_block()
        start = self.tok
        self.enter()
        stmt = self.parse_statement()
        self.depth -= 1
        return A.Block([stmt], span=start.span)

    # loop = { attribute } (while_stmt | for_stmt)
    # while_stmt = "while" "(" expr ")" body
    def parse_loop(self, label: Token | None) -> A.Stmt:
        attrs = self.parse_attributes()
        t = self.tok
        name = label.text if label else None
        if t.kind == "while":
            self.i += 1
            cond = self.parse_condition()
            return A.While(cond, self.parse_body(), name, attrs, span=t.span)
        if t.kind == "for":
            return self.parse_for(name, attrs)
        raise self.err(f"expected 'while' or 'for' after a loop label or attribute, found "
                       f"{describe(t)}", t)

    # for_stmt = "for" "(" [for_init] ";" [expr] ";" [simple] ")" body
    #          | "for" IDENT [":" type] "in" expr ".." ["="] expr body
    def parse_for(self, label: str | None, attrs: list[A.Attribute]) -> A.Stmt:
        kw = self.expect("for")
        if self.tok.kind != "(":
            return self.parse_for_range(kw, label, attrs)
        self.i += 1
        self.brackets += 1
        init = None
        if self.tok.kind in ("var", "const"):
            init = self.parse_var_no_end()
        elif self.tok.kind != ";":
            init = self.parse_for_clause()
        self.expect(";")
        cond = None if self.tok.kind == ";" else self.parse_expr()
        self.expect(";")
        step = None if self.tok.kind == ")" else self.parse_for_clause()
        self.brackets -= 1
        self.expect(")", "')' closing the for header")
        return A.For(init, cond, step, self.parse_body(), label, attrs, span=kw.span)

    def parse_var_no_end(self) -> A.VarDecl:
        kw = self.advance()
        name = self.expect(IDENT, "a name")
        self.expect(":", "':' and the variable type")
        ty = self.parse_type()
        self.expect("=", "'=' and the initial value")
        cls = A.ConstDecl if kw.kind == "const" else A.VarDecl
        return cls(name.text, ty, self.parse_expr(), span=name.span)

    def parse_for_clause(self) -> A.Stmt:
        start = self.tok
        target = self.parse_expr()
        if self.tok.kind in ASSIGN_OPS:
            op = self.advance().kind
            return A.Assign(op, target, self.parse_expr(), span=self.span_from(start))
        return A.ExprStmt(target, span=self.span_from(start))

    def parse_for_range(self, kw: Token, label, attrs) -> A.ForRange:
        var = self.expect(IDENT, "'(' or a loop variable")
        ty = self.parse_type() if self.accept(":") else None
        self.expect_word("in")
        lo = self.parse_expr()
        dots = self.expect("..", "'..' in the range")
        inclusive = False
        eq = self.tok
        if eq.kind == "=" and eq.span.line == dots.span.line and \
                eq.span.col == dots.span.col + 2:
            self.i += 1
            inclusive = True
        hi = self.parse_expr()
        body = self.parse_body()
        return A.ForRange(var.text, ty, lo, hi, inclusive, body, label, attrs, span=kw.span)

    # switch_stmt = "switch" "(" expr ")" "{" { case_label { statement } } "}"
    # case_label = "case" case_value { "," case_value } ":" | "default" ":"
    # case_value = expr [".." expr]
    def parse_switch(self) -> A.Switch:
        kw = self.expect("switch")
        subject = self.parse_condition()
        self.expect("{")
        cases: list[A.SwitchCase] = []
        while self.tok.kind not in ("}", EOF):
            lab = self.tok
            if lab.kind == "default":
                self.i += 1
                case = A.SwitchCase([], [], [], True, span=lab.span)
            elif lab.kind == "case":
                self.i += 1
                case = self.parse_case_values(lab)
            else:
                raise self.err(f"expected 'case' or 'default', found {describe(lab)}", lab)
            self.expect(":", "':' after the case label")
            case.body = self.parse_case_body()
            cases.append(case)
        self.expect("}", "'}' closing the switch")
        return A.Switch(subject, cases, span=kw.span)

    def parse_case_values(self, lab: Token) -> A.SwitchCase:
        values, ranges = [], []
        while True:
            lo = self.in_brackets(self.parse_expr)
            if self.accept(".."):
                ranges.append(A.CaseRange(lo, self.in_brackets(self.parse_expr)))
            else:
                values.append(lo)
            if not self.accept(","):
                return A.SwitchCase(values, ranges, [], span=lab.span)

    def parse_case_body(self) -> list[A.Stmt]:
        body = []
        level = self.depth
        while self.tok.kind not in ("case", "default", "}", EOF):
            start = self.i
            try:
                body.append(self.parse_statement())
            except CompileError as e:
                self.record(e)
                self.depth, self.brackets = level, 0
                self.sync(start, None)
        return body

    # jump = ("break" | "continue") [IDENT] end
    def parse_jump(self) -> A.Stmt:
        kw = self.advance()
        label = None
        if self.tok.kind == IDENT and not self.tok.nl_before:
            label = self.advance().text
        self.end_stmt()
        cls = A.Break if kw.kind == "break" else A.Continue
        return cls(label, span=self.span_from(kw))

    # return_stmt = "return" [expr] end
    def parse_return(self) -> A.Return:
        kw = self.advance()
        value = None
        t = self.tok
        if not (t.kind in (";", "}", EOF) or t.nl_before):
            value = self.parse_expr()
        self.end_stmt()
        return A.Return(value, span=kw.span)

    # dispatch_stmt = "dispatch" kernel_ref "[" controls "]" "(" [expr {"," expr}] ")"
    #                 ["on" expr] end
    # kernel_ref = IDENT { "." IDENT } | "(" expr ")"
    def parse_dispatch(self) -> A.Dispatch:
        kw = self.expect("dispatch")
        kernel = self.parse_kernel_ref()
        self.expect("[", "'[' and the launch geometry")
        node = self.in_brackets(self.parse_dispatch_controls, kernel, kw)
        self.expect("]", "']' closing the launch geometry")
        self.expect("(", "'(' and the kernel arguments")
        node.args = self.in_brackets(self.parse_expr_list, ")")
        self.expect(")", "')' or ','")
        on = self.tok
        if on.kind == IDENT and on.text == "on" and not on.nl_before:
            self.i += 1
            node.on_stream = self.parse_expr()
        self.end_stmt()
        return node

    def parse_kernel_ref(self) -> A.Expr:
        t = self.tok
        if t.kind == "(":
            self.i += 1
            e = self.in_brackets(self.parse_expr)
            self.expect(")")
            return e
        e: A.Expr = A.Name(self.expect(IDENT, "a kernel name or handle").text, span=t.span)
        while self.accept("."):
            e = A.Member(e, self.expect(IDENT, "a member name").text, span=self.span_from(t))
        return e

    # controls = expr "," expr | named_control { "," named_control }
    # named_control = ("grid" | "block" | "shared" | "stream" | "work") ":" (tuple | expr)
    def parse_dispatch_controls(self, kernel: A.Expr, kw: Token) -> A.Dispatch:
        if not (self.tok.kind == IDENT and self.peek().kind == ":"):
            grid = self.parse_expr()
            self.expect(",", "',' between grid and block")
            block = self.parse_expr()
            return A.Dispatch(kernel, [], False, [grid], [block], span=kw.span)
        node = A.Dispatch(kernel, [], True, span=kw.span)
        seen: set[str] = set()
        while True:
            key = self.expect(IDENT, "a launch control name")
            self.expect(":")
            if key.text in seen:
                raise self.err(f"duplicate launch control '{key.text}'", key)
            seen.add(key.text)
            if key.text in ("grid", "block"):
                setattr(node, key.text, self.parse_dims())
            elif key.text in ("shared", "stream", "work"):
                setattr(node, key.text, self.parse_expr())
            else:
                raise self.err(f"unknown launch control '{key.text}' (expected grid, block, "
                               "shared, stream or work)", key)
            if not self.accept(","):
                return node

    def parse_dims(self) -> list[A.Expr]:
        if self.tok.kind == "(" and self.paren_has_top_comma():
            self.i += 1
            dims = self.parse_expr_list(")")
            self.expect(")")
            return dims
        return [self.parse_expr()]

    def paren_has_top_comma(self) -> bool:
        depth, j = 0, self.i
        while j < len(self.toks):
            k = self.toks[j].kind
            if k in ("(", "[", "{"):
                depth += 1
            elif k in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    return False
            elif k == "," and depth == 1:
                return True
            elif k == EOF:
                return False
            j += 1
        return False

    # barrier_stmt = "barrier" "(" [word { "," word }] ")" end
    def parse_barrier(self) -> A.Barrier:
        kw = self.expect("barrier")
        self.expect("(")
        regions, order = [], None
        while self.tok.kind != ")":
            w = self.tok
            if w.kind not in (IDENT, "workgroup"):
                raise self.err(f"expected a barrier region or memory order, found "
                               f"{describe(w)}", w)
            self.i += 1
            if w.text in ORDERS:
                if order is not None:
                    raise error("E0323", "a barrier takes one memory order", w.span)
                order = w.text
            elif w.text in REGIONS:
                if w.text in regions:
                    raise error("E0323", f"duplicate barrier region '{w.text}'", w.span)
                regions.append(w.text)
            else:
                raise error("E0323", f"unknown barrier argument '{w.text}' (regions: "
                            "workgroup, global; orders: acquire, release, acq_rel, seq_cst)",
                            w.span)
            if not self.accept(","):
                break
        self.expect(")", "')' or ','")
        span = self.span_from(kw)
        self.end_stmt()
        return A.Barrier(regions, order, span=span)


def parse_tokens(tokens: list[Token], path: str, bag: DiagnosticBag) -> A.Module:
    """Parse a token list; syntax errors are added to `bag` (which raises at the cap)."""
    return Parser(tokens, path, bag).parse_module()


def parse_source(text: str, path: str = "<input>") -> A.Module:
    """Lex and parse one source text; raise CompileError with every diagnostic found.

    This is the fuzzing seam: for any input it returns a Module or raises CompileError.
    """
    from .lexer import tokenize
    bag = DiagnosticBag()
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    tokens = tokenize(text, path, bag)
    try:
        module = parse_tokens(tokens, path, bag)
    except RecursionError:
        bag.error("E0002", "program is nested too deeply", Span(path, 1, 1, 1))
        raise CompileError(bag.items) from None
    bag.raise_if_errors()
    return module
