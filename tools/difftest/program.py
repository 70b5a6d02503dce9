"""A generated program as a small tree that prints both as Mettle and as C.

Expressions carry their Mettle static type (`ty`, from model.py). The C text states every
literal's Mettle type with a cast, so C's usual arithmetic conversions then reproduce
Mettle's (§12.9, §12.10); float literals beside a float32 operand become `(float)v`.
Statements are kept in nested lists so the reducer can delete any one of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .model import C_NAMES, FLOATS, INTS, is_float, literal_type


def c_type(t: str) -> str:
    return C_NAMES.get(t, t)


# ---------------------------------------------------------------- expressions
class Expr:
    ty: str

    def m(self) -> str:
        raise NotImplementedError

    def c(self) -> str:
        raise NotImplementedError


@dataclass
class Lit(Expr):
    value: int | float
    float_as: str | None = None     # a float literal's type in context (float32/float64)
    spelling: str = "dec"           # "hex" | "bin" | "char" for a non-negative integer

    @property
    def ty(self) -> str:
        if isinstance(self.value, float):
            return self.float_as or "float64"
        return literal_type(self.value)

    def m(self) -> str:
        if isinstance(self.value, float):
            return f"({self.value!r})" if self.value < 0 else repr(self.value)
        if self.value < 0:
            return f"({self.value})"
        if self.spelling == "hex":
            return hex(self.value).replace("0x", "0X") if self.value % 2 else hex(self.value)
        if self.spelling == "bin":
            return bin(self.value)
        if self.spelling == "char" and 32 <= self.value < 127 and chr(self.value) not in "'\\":
            return f"'{chr(self.value)}'"
        return str(self.value)

    def c(self) -> str:
        if isinstance(self.value, float):
            return f"(({c_type(self.ty)}){self.value!r})"
        suffix = "ULL" if self.ty == "uint64" else "LL"
        if self.value == -(1 << 63):
            return "((int64_t)(-9223372036854775807LL - 1))"
        return f"(({c_type(self.ty)}){self.value}{suffix})"


@dataclass
class Var(Expr):
    name: str
    ty: str
    cv: int | None = None           # the value of a named integer constant

    def m(self) -> str:
        return self.name

    def c(self) -> str:
        return self.name


def untyped(e: Expr) -> bool:
    """Mettle folds an expression of literals and named constants exactly (it never wraps)
    and types the result like a literal; C must see that folded value."""
    if isinstance(e, Lit):
        return isinstance(e.value, int)
    if isinstance(e, Var):
        return e.cv is not None
    if isinstance(e, Un):
        return untyped(e.e)
    if isinstance(e, Bin):
        return untyped(e.l) and untyped(e.r)
    return False


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def fold(e: Expr) -> int:
    if isinstance(e, Lit):
        return e.value
    if isinstance(e, Var):
        return e.cv
    if isinstance(e, Un):
        v = fold(e.e)
        return {"-": -v, "~": ~v, "!": int(not v), "+": v}[e.op]
    a, b, op = fold(e.l), fold(e.r), e.op
    if op == "/":
        return _cdiv(a, b)
    if op == "%":
        return a - _cdiv(a, b) * b
    if op == "&&":
        return int(bool(a) and bool(b))
    if op == "||":
        return int(bool(a) or bool(b))
    return int(eval(f"a {op} b"))


@dataclass
class Bin(Expr):
    op: str
    l: Expr
    r: Expr
    ty: str = ""

    def m(self) -> str:
        return f"({self.l.m()} {self.op} {self.r.m()})"

    def c(self) -> str:
        if untyped(self):
            return Lit(fold(self)).c()
        return f"({self.l.c()} {self.op} {self.r.c()})"


@dataclass
class Un(Expr):
    op: str
    e: Expr
    ty: str = ""

    def m(self) -> str:
        return f"({self.op}{self.e.m()})"

    def c(self) -> str:
        if untyped(self):
            return Lit(fold(self)).c()
        return f"({self.op}{self.e.c()})"


@dataclass
class Cast(Expr):
    ty: str
    e: Expr

    def m(self) -> str:
        return f"(({self.ty}){self.e.m()})"

    def c(self) -> str:
        return f"(({c_type(self.ty)}){self.e.c()})"


@dataclass
class Call(Expr):
    fn: str
    args: list
    ty: str

    def m(self) -> str:
        return f"{self.fn}({', '.join(a.m() for a in self.args)})"

    def c(self) -> str:
        return f"{self.fn}({', '.join(a.c() for a in self.args)})"


@dataclass
class Index(Expr):
    """`a[(i) & (n - 1)]`: n is a power of two, so the index is always in bounds."""
    base: str
    idx: Expr
    n: int
    ty: str

    def m(self) -> str:
        return f"{self.base}[({self.idx.m()}) & {self.n - 1}]"

    def c(self) -> str:
        return f"{self.base}[({self.idx.c()}) & {self.n - 1}]"


@dataclass
class Field(Expr):
    base: str
    name: str
    ty: str
    arrow: bool = False

    def m(self) -> str:
        return f"{self.base}{'->' if self.arrow else '.'}{self.name}"

    def c(self) -> str:
        return self.m()


@dataclass
class FieldIndex(Expr):
    """`s.f[(i) & (n - 1)]`: an array field."""
    base: str
    name: str
    idx: Expr
    n: int
    ty: str
    arrow: bool = False

    def m(self) -> str:
        return f"{self.base}{'->' if self.arrow else '.'}{self.name}[({self.idx.m()}) & " \
               f"{self.n - 1}]"

    def c(self) -> str:
        return f"{self.base}{'->' if self.arrow else '.'}{self.name}[({self.idx.c()}) & " \
               f"{self.n - 1}]"


@dataclass
class Deref(Expr):
    """`*p` through a pointer parameter."""
    name: str
    ty: str

    def m(self) -> str:
        return f"(*{self.name})"

    def c(self) -> str:
        return f"(*{self.name})"


@dataclass
class AddrOf(Expr):
    name: str
    ty: str

    def m(self) -> str:
        return f"&{self.name}"

    def c(self) -> str:
        return f"&{self.name}"


@dataclass
class PtrDiff(Expr):
    """`&a[i] - &a[j]`: Mettle gives the BYTE difference as int64 (LANGUAGE §4)."""
    base: str
    i: Expr
    j: Expr
    n: int
    ty: str = "int64"

    def m(self) -> str:
        return f"(&{self.base}[({self.i.m()}) & {self.n - 1}] - " \
               f"&{self.base}[({self.j.m()}) & {self.n - 1}])"

    def c(self) -> str:
        return f"((int64_t)((char*)&{self.base}[({self.i.c()}) & {self.n - 1}] - " \
               f"(char*)&{self.base}[({self.j.c()}) & {self.n - 1}]))"


@dataclass
class PtrRead(Expr):
    """`*(&a[0] + k)`: pointer plus integer scales by the element size."""
    base: str
    k: Expr
    n: int
    ty: str

    def m(self) -> str:
        return f"(*(&{self.base}[0] + (({self.k.m()}) & {self.n - 1})))"

    def c(self) -> str:
        return f"(*(&{self.base}[0] + (({self.k.c()}) & {self.n - 1})))"


@dataclass
class SizeOf(Expr):
    """`sizeof(T)` is an int64 in Mettle (C's is an unsigned size_t)."""
    of: str
    count: int = 0
    ty: str = "int64"

    def m(self) -> str:
        return f"sizeof({self.of}[{self.count}])" if self.count else f"sizeof({self.of})"

    def c(self) -> str:
        arr = f"[{self.count}]" if self.count else ""
        return f"((int64_t)sizeof({c_type(self.of)}{arr}))"


# ---------------------------------------------------------------- statements
class Stmt:
    def m(self, ind: str) -> list[str]:
        raise NotImplementedError

    def c(self, ind: str) -> list[str]:
        raise NotImplementedError

    def children(self) -> list[list]:
        return []


@dataclass
class Decl(Stmt):
    name: str
    ty: str
    init: Expr | None            # None: an array/struct left to zero-initialization
    count: int = 0               # > 0: an array of `count` elements
    const: bool = False

    def m(self, ind):
        t = f"{self.ty}[{self.count}]" if self.count else self.ty
        kw = "const" if self.const else "var"
        init = f" = {self.init.m()}" if self.init is not None else ""
        return [f"{ind}{kw} {self.name}: {t}{init};"]

    def c(self, ind):
        arr = f"[{self.count}]" if self.count else ""
        init = f" = {self.init.c()}" if self.init is not None else " = {0}"
        kw = "const " if self.const else ""
        return [f"{ind}{kw}{c_type(self.ty)} {self.name}{arr}{init};"]


@dataclass
class Assign(Stmt):
    target: Expr
    value: Expr
    op: str = "="

    def m(self, ind):
        return [f"{ind}{self.target.m()} {self.op} {self.value.m()};"]

    def c(self, ind):
        return [f"{ind}{self.target.c()} {self.op} {self.value.c()};"]


@dataclass
class Print(Stmt):
    value: Expr

    def m(self, ind):
        return [f"{ind}print_int({self.value.m()}); newline();"]

    def c(self, ind):
        return [f"{ind}print_int({self.value.c()}); newline();"]


@dataclass
class ExprStmt(Stmt):
    value: Expr

    def m(self, ind):
        return [f"{ind}{self.value.m()};"]

    def c(self, ind):
        return [f"{ind}(void){self.value.c()};"]


@dataclass
class If(Stmt):
    cond: Expr
    then: list
    else_: list = field(default_factory=list)

    def m(self, ind):
        out = [f"{ind}if ({self.cond.m()}) {{"] + _body_m(self.then, ind)
        if len(self.else_) == 1 and isinstance(self.else_[0], If):
            chained = self.else_[0].m(ind)          # `} else if (...) {`
            return out + [f"{ind}}} else {chained[0].lstrip()}"] + chained[1:]
        if self.else_:
            out += [f"{ind}}} else {{"] + _body_m(self.else_, ind)
        return out + [f"{ind}}}"]

    def c(self, ind):
        out = [f"{ind}if ({self.cond.c()}) {{"] + _body_c(self.then, ind)
        if self.else_:
            out += [f"{ind}}} else {{"] + _body_c(self.else_, ind)
        return out + [f"{ind}}}"]

    def children(self):
        return [self.then, self.else_]


@dataclass
class ForRange(Stmt):
    var: str
    count: int
    body: list
    inclusive: bool = False         # `0..=n`
    ty: str = ""                    # `for k: int64 in ...` when set (else int32)

    def m(self, ind):
        t = f": {self.ty}" if self.ty else ""
        dots = "..=" if self.inclusive else ".."
        return [f"{ind}for {self.var}{t} in 0{dots}{self.count} {{"] + \
            _body_m(self.body, ind) + [f"{ind}}}"]

    def c(self, ind):
        v, t = self.var, c_type(self.ty or "int32")
        cmp = "<=" if self.inclusive else "<"
        return [f"{ind}for ({t} {v} = 0; {v} {cmp} {self.count}; {v}++) {{"] + \
            _body_c(self.body, ind) + [f"{ind}}}"]

    def children(self):
        return [self.body]


@dataclass
class While(Stmt):
    """`var w = 0; while (w < n) { body; w = w + 1; }` with the counter kept outside body."""
    var: str
    count: int
    body: list

    def m(self, ind):
        return [f"{ind}var {self.var}: int32 = 0;", f"{ind}while ({self.var} < {self.count}) {{"] \
            + _body_m(self.body, ind) + [f"{ind}    {self.var} = {self.var} + 1;", f"{ind}}}"]

    def c(self, ind):
        return [f"{ind}int32_t {self.var} = 0;", f"{ind}while ({self.var} < {self.count}) {{"] \
            + _body_c(self.body, ind) + [f"{ind}    {self.var} = {self.var} + 1;", f"{ind}}}"]

    def children(self):
        return [self.body]


@dataclass
class CFor(Stmt):
    var: str
    count: int
    body: list

    def m(self, ind):
        v = self.var
        return [f"{ind}for (var {v}: int32 = 0; {v} < {self.count}; {v} += 1) {{"] + \
            _body_m(self.body, ind) + [f"{ind}}}"]

    def c(self, ind):
        v = self.var
        return [f"{ind}for (int32_t {v} = 0; {v} < {self.count}; {v} += 1) {{"] + \
            _body_c(self.body, ind) + [f"{ind}}}"]

    def children(self):
        return [self.body]


@dataclass
class Jump(Stmt):
    kind: str               # "break" | "continue"

    def m(self, ind):
        return [f"{ind}{self.kind};"]

    def c(self, ind):
        return [f"{ind}{self.kind};"]


@dataclass
class Case:
    lo: int
    hi: int | None          # an inclusive range when set
    body: list
    brk: bool               # ends with `break` (else falls through)


@dataclass
class Switch(Stmt):
    subject: Expr
    cases: list
    default: list | None

    def m(self, ind):
        out = [f"{ind}switch ({self.subject.m()}) {{"]
        for c in self.cases:
            label = f"{c.lo}..{c.hi}" if c.hi is not None else f"{c.lo}"
            out += [f"{ind}    case {label}: {{"] + _body_m(c.body, ind + "    ") + \
                [f"{ind}    }}"] + ([f"{ind}    break;"] if c.brk else [])
        if self.default is not None:
            out += [f"{ind}    default: {{"] + _body_m(self.default, ind + "    ") + \
                [f"{ind}    }}"]
        return out + [f"{ind}}}"]

    def c(self, ind):
        out = [f"{ind}switch ({self.subject.c()}) {{"]
        for c in self.cases:
            label = f"{c.lo}LL ... {c.hi}LL" if c.hi is not None else f"{c.lo}LL"
            out += [f"{ind}    case {label}: {{"] + _body_c(c.body, ind + "    ") + \
                [f"{ind}    }}"] + ([f"{ind}    break;"] if c.brk else [])
        if self.default is not None:
            out += [f"{ind}    default: {{"] + _body_c(self.default, ind + "    ") + \
                [f"{ind}    }}"]
        return out + [f"{ind}}}"]

    def children(self):
        return [c.body for c in self.cases] + ([self.default] if self.default else [])


@dataclass
class Return(Stmt):
    value: Expr

    def m(self, ind):
        return [f"{ind}return {self.value.m()};"]

    def c(self, ind):
        return [f"{ind}return {self.value.c()};"]


def _body_m(stmts, ind):
    return [line for s in stmts for line in s.m(ind + "    ")]


def _body_c(stmts, ind):
    return [line for s in stmts for line in s.c(ind + "    ")]


# ---------------------------------------------------------------- top level
@dataclass
class Struct:
    name: str
    fields: list            # [(name, type)] scalars
    arrays: list = field(default_factory=list)      # [(name, element type, count)]
    nested: list = field(default_factory=list)      # [(name, struct name)]

    def m(self):
        return [f"struct {self.name} {{ " + " ".join(f"{n}: {t};" for n, t in self.fields)
                + "".join(f" {n}: {t}[{k}];" for n, t, k in self.arrays)
                + "".join(f" {n}: {t};" for n, t in self.nested) + " }"]

    def c(self):
        return [f"typedef struct {self.name} {{ " +
                " ".join(f"{c_type(t)} {n};" for n, t in self.fields) +
                "".join(f" {c_type(t)} {n}[{k}];" for n, t, k in self.arrays) +
                "".join(f" {t} {n};" for n, t in self.nested) + f" }} {self.name};"]


@dataclass
class Function:
    name: str
    params: list            # [(name, type)]; a type ending in `*` is a pointer
    ret: str
    body: list              # statements; the last is a Return unless ret is void
    recursive: bool = False

    def m(self):
        ps = ", ".join(f"{n}: {t}" for n, t in self.params)
        ret = "" if self.ret == "void" else f" -> {self.ret}"
        return [f"fn {self.name}({ps}){ret} {{"] + _body_m(self.body, "") + ["}"]

    def c_proto(self):
        ps = ", ".join(f"{_c_param(t)} {n}" for n, t in self.params) or "void"
        ret = "void" if self.ret == "void" else c_type(self.ret)
        return f"static {ret} {self.name}({ps})"

    def c(self):
        return [self.c_proto() + " {"] + _body_c(self.body, "") + ["}"]


def _c_param(t: str) -> str:
    return c_type(t[:-1]) + "*" if t.endswith("*") else c_type(t)


M_PRELUDE = """import "std/io";
fn f2i(x: float64) -> int64 {
    if (x > -1000000000000000.0 && x < 1000000000000000.0) { return (int64)x; }
    return -1;
}"""

C_PRELUDE = """#include <stdint.h>
#include <stdio.h>
static void print_int(int64_t v) { printf("%lld", (long long)v); }
static void newline(void) { putchar('\\n'); }
static int64_t f2i(double x) {
    if (x > -1000000000000000.0 && x < 1000000000000000.0) { return (int64_t)x; }
    return -1;
}"""


@dataclass
class Program:
    seed: int
    structs: list
    functions: list         # helpers first, `main` last
    prefix: str = ""
    globals: list = field(default_factory=list)     # Decls with constant initializers

    @property
    def entry(self) -> str:
        return f"{self.prefix}main" if self.prefix else "main"

    def mettle(self) -> str:
        out = [f"// difftest program, seed {self.seed}", M_PRELUDE]
        for s in self.structs:
            out += s.m()
        for g in self.globals:
            out += g.m("")
        for f in self.functions:
            out += f.m()
        return "\n".join(out) + "\n"

    def c(self) -> str:
        out = [f"/* difftest program, seed {self.seed} */", C_PRELUDE]
        for s in self.structs:
            out += s.c()
        for g in self.globals:
            out += ["static " + line for line in g.c("")]
        out += [f.c_proto() + ";" for f in self.functions if f.name != "main"]
        for f in self.functions:
            if f.name == "main":
                out += ["int main(void) {"] + _body_c(f.body, "") + ["}"]
            else:
                out += f.c()
        return "\n".join(out) + "\n"


MARK = "@@program "


def batch_mettle(progs: list[Program]) -> str:
    """Several programs in one module: each `main` becomes `<prefix>main`, called in turn
    after a marker line (their top-level names carry per-program prefixes)."""
    out = [M_PRELUDE, f'fn mark(s: int64) {{ print("{MARK}"); print_int(s); newline(); }}']
    for p in progs:
        out += [line for s in p.structs for line in s.m()]
        out += [line for g in p.globals for line in g.m("")]
        for f in p.functions:
            lines = f.m()
            if f.name == "main":
                lines[0] = lines[0].replace("fn main(", f"fn {p.entry}(", 1)
            out += lines
    out.append("fn main() -> int32 {")
    out += [f"    mark({p.seed}); {p.entry}();" for p in progs]
    return "\n".join(out + ["    return 0;", "}"]) + "\n"


def batch_c(progs: list[Program]) -> str:
    out = [C_PRELUDE, f'static void mark(int64_t s) {{ printf("{MARK}%lld\\n", (long long)s); }}']
    for p in progs:
        out += [line for s in p.structs for line in s.c()]
        out += ["static " + line for g in p.globals for line in g.c("")]
        out += [f.c_proto() + ";" for f in p.functions if f.name != "main"]
        for f in p.functions:
            if f.name == "main":
                out += [f"static int32_t {p.entry}(void) {{"] + _body_c(f.body, "") + ["}"]
            else:
                out += f.c()
    out.append("int main(void) {")
    out += [f"    mark({p.seed}); {p.entry}();" for p in progs]
    return "\n".join(out + ["    return 0;", "}"]) + "\n"


def split_batch(stdout: str) -> dict[int, str]:
    """{seed: that program's output} from a batch run's output."""
    parts: dict[int, str] = {}
    seed, lines = None, []
    for line in stdout.splitlines(keepends=True):
        if line.startswith(MARK):
            if seed is not None:
                parts[seed] = "".join(lines)
            seed, lines = int(line[len(MARK):]), []
        else:
            lines.append(line)
    if seed is not None:
        parts[seed] = "".join(lines)
    return parts


FLOAT_TYPES = tuple(FLOATS)
INT_TYPES = tuple(INTS)
__all__ = ["Program", "Function", "Struct", "Lit", "Var", "Bin", "Un", "Cast", "Call",
           "Index", "Field", "AddrOf", "Decl", "Assign", "Print", "ExprStmt", "If",
           "ForRange", "While", "Return", "is_float", "INT_TYPES", "FLOAT_TYPES"]
