"""Mettle abstract syntax tree: plain dataclasses produced by the parser.

Consumers: the type checker (fills `Expr.ty`, resolves names) and IR lowering.

Invariants (stable contract; changes are additive only):
- Every node has `.span` (a keyword-only field, so positional fields read naturally).
- Every expression has a mutable `ty` slot, None until the checker sets it.
- Declarations carry `exported` and `internal_name`; the module loader sets
  `internal_name` (`__import_<hash>_<name>`) on top-level names hidden by `export`.
- Syntax sugar is kept as written: `p->f` is `Arrow`, `a[i] += 1` is `Assign("+=", ...)`,
  `else if` is an `If` whose `else_` is another `If` (never a Block wrapping one).
- Integers are Python ints (unsized; char literals are IntLit), floats are Python floats,
  string literal values are UTF-8 `bytes` with escapes already decoded.
- Array sizes in `ArrayType` are ints (the grammar only allows a number token).
- `Barrier.regions`/`order` hold the words as written; `barrier()` leaves both empty/None,
  which means (workgroup, seq_cst).
"""
from __future__ import annotations

from collections import namedtuple

from ...records import dataclass, field      # (start-up: neither dataclasses nor typing)

from ..diagnostics import Span


@dataclass(eq=False)
class Node:
    span: Span = field(kw_only=True)


# ---------------------------------------------------------------- type expressions
@dataclass(eq=False)
class TypeExpr(Node):
    pass


@dataclass(eq=False)
class NamedType(TypeExpr):
    name: str                       # int32, float64, string, bool, cstring, void, S, E ...
    qualifier: str | None = None     # `vec` in `vec.Vec` (an import alias)
    args: list[TypeExpr] = field(default_factory=list)   # `Pair<int32, T>` (generics)


@dataclass(eq=False)
class PointerType(TypeExpr):
    elem: TypeExpr


@dataclass(eq=False)
class ArrayType(TypeExpr):
    elem: TypeExpr
    size: int


@dataclass(eq=False)
class TileTypeExpr(TypeExpr):
    """`tile<FORMAT, ROWS, COLUMNS>` (docs/reference/tiles.md); an extent is a number or
    the name of a top-level integer const."""
    format: str
    rows: int | str
    columns: int | str


@dataclass(eq=False)
class FnPtrType(TypeExpr):
    params: list[TypeExpr]
    ret: TypeExpr | None            # None means void
    is_closure: bool = False        # `Fn(A) -> R` (later tier) vs thin `fn(A) -> R`


# ---------------------------------------------------------------- expressions
@dataclass(eq=False)
class Expr(Node):
    ty: object = field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(eq=False)
class IntLit(Expr):
    value: int


@dataclass(eq=False)
class FloatLit(Expr):
    value: float
    text: str = ""


@dataclass(eq=False)
class StrLit(Expr):
    value: bytes


@dataclass(eq=False)
class ImportStr(StrLit):
    """`import_str "path"`: a string literal whose bytes (`value`) are the file's, filled in
    by embed.py once the program is loaded (empty until then)."""
    path: str = ""


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class Name(Expr):
    name: str


@dataclass(eq=False)
class Unary(Expr):
    op: str                         # "-" "+" "~" "!"  (`*` is Deref, `&` is AddrOf)
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str                         # "*" ... "||" per LANGUAGE §4
    left: Expr
    right: Expr


@dataclass(eq=False)
class Cast(Expr):
    type: TypeExpr
    expr: Expr


# `order: acq_rel` in a call: name (str), value (Expr), span; a tuple so
# `name, value, span = arg` works.
NamedArg = namedtuple("NamedArg", ("name", "value", "span"))


@dataclass(eq=False)
class Call(Expr):
    callee: Expr
    args: list[Expr]
    named_args: list[NamedArg] = field(default_factory=list)
    type_args: list[TypeExpr] = field(default_factory=list)  # generics: later tier, empty
    refused: bool = False     # generics.py refused its type arguments (reported already)


@dataclass(eq=False)
class Index(Expr):
    base: Expr
    index: Expr


@dataclass(eq=False)
class Member(Expr):
    base: Expr
    name: str


@dataclass(eq=False)
class Arrow(Expr):
    base: Expr
    name: str


@dataclass(eq=False)
class AddrOf(Expr):
    operand: Expr


@dataclass(eq=False)
class Deref(Expr):
    operand: Expr


@dataclass(eq=False)
class Lambda(Expr):
    """`fn (params) [-> R] { body }` in expression position (closures.py)."""
    params: list[Param]
    ret: TypeExpr | None
    body: Block


@dataclass(eq=False)
class New(Expr):
    """`new T`: zeroed heap storage for one T, typed T*."""
    type: TypeExpr


@dataclass(eq=False)
class SizeOf(Expr):
    type: TypeExpr


@dataclass(eq=False)
class ArrayLit(Expr):
    elems: list[Expr]


@dataclass(eq=False)
class ArrayRepeat(Expr):
    value: Expr
    count: Expr


FieldInit = namedtuple("FieldInit", ("name", "value", "span"))   # name: str, value: Expr


@dataclass(eq=False)
class StructLit(Expr):
    fields: list[FieldInit]


@dataclass(eq=False)
class TupleExpr(Expr):
    """`(x, y, z)`: only produced for named dispatch controls (grid/block)."""
    elems: list[Expr]


# ---------------------------------------------------------------- statements
@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Attribute(Node):
    """A decorator or loop attribute: `@inline!` -> name "inline!", `@unroll(4)` -> args [4]."""
    name: str
    args: list[int] = field(default_factory=list)


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt]


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class Assign(Stmt):
    op: str                         # "=" or a compound op such as "+=", "<<="
    target: Expr
    value: Expr


@dataclass(eq=False)
class VarDecl(Stmt):
    """`var` (and, via ConstDecl, `const`), global or local.

    storage is "none" | "workgroup" | "private". An extern var has is_extern and link_name
    (`extern var v: T = "sym";`) and no init.
    """
    name: str
    type: TypeExpr | None
    init: Expr | None
    is_const: bool = False
    storage: str = "none"
    is_global: bool = False
    exported: bool = False
    is_extern: bool = False
    link_name: str | None = None
    internal_name: str | None = None


@dataclass(eq=False)
class ConstDecl(VarDecl):
    """`const N = 64;` (type optional at top level). Always is_const=True."""
    is_const: bool = True


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Block
    else_: Stmt | None = None       # Block, If (flattened `else if`) or None


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: Block
    label: str | None = None
    attrs: list[Attribute] = field(default_factory=list)


@dataclass(eq=False)
class For(Stmt):
    """C-style `for (init; cond; step) body`; each part may be None."""
    init: Stmt | None
    cond: Expr | None
    step: Stmt | None
    body: Block
    label: str | None = None
    attrs: list[Attribute] = field(default_factory=list)


@dataclass(eq=False)
class ForRange(Stmt):
    """`for k in lo..hi` / `lo..=hi` (inclusive) / `for k: int64 in ...`."""
    var: str
    type: TypeExpr | None
    lo: Expr
    hi: Expr
    inclusive: bool
    body: Block
    label: str | None = None
    attrs: list[Attribute] = field(default_factory=list)


CaseRange = namedtuple("CaseRange", ("lo", "hi"))   # `case 3..9:`, inclusive on both ends


@dataclass(eq=False)
class SwitchCase(Node):
    """One `case ...:` or `default:` label and the statements up to the next label.

    Control falls through into the next SwitchCase unless the body breaks/returns.
    """
    values: list[Expr]
    ranges: list[CaseRange]
    body: list[Stmt]
    is_default: bool = False


@dataclass(eq=False)
class Switch(Stmt):
    subject: Expr
    cases: list[SwitchCase]         # in source order (fall-through order)

    @property
    def default(self) -> SwitchCase | None:
        return next((c for c in self.cases if c.is_default), None)


@dataclass(eq=False)
class Break(Stmt):
    label: str | None = None


@dataclass(eq=False)
class Continue(Stmt):
    label: str | None = None


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None = None


@dataclass(eq=False)
class Dispatch(Stmt):
    """`dispatch K[g, b](args)` (compact) or `dispatch K[grid: .., block: .., ...](args) on s`.

    Compact form: grid=[g], block=[b]. Named form: grid/block hold the tuple elements as
    written (the checker requires three); shared/stream/work are None when absent.
    `on_stream` is the `on s` sugar (an error in the checker if `stream:` is also given).
    """
    kernel: Expr
    args: list[Expr]
    named: bool
    grid: list[Expr] = field(default_factory=list)
    block: list[Expr] = field(default_factory=list)
    shared: Expr | None = None
    stream: Expr | None = None
    work: Expr | None = None
    on_stream: Expr | None = None


@dataclass(eq=False)
class Defer(Stmt):
    """`defer S` / `errdefer S` (is_err); S is an ExprStmt of a call, an Assign or a Block."""
    stmt: Stmt
    is_err: bool = False


@dataclass(eq=False)
class StaticAssert(Stmt):
    """`static_assert(cond);` at top level or as a statement; `args` as written (the
    checker wants exactly one compile-time integer condition)."""
    args: list[Expr]


@dataclass(eq=False)
class Barrier(Stmt):
    regions: list[str]              # subset of {"workgroup", "global"}, as written
    order: str | None = None        # acquire | release | acq_rel | seq_cst


# ---------------------------------------------------------------- declarations
@dataclass(eq=False)
class Param(Node):
    name: str
    type: TypeExpr


@dataclass(eq=False)
class FnDecl(Stmt):
    """fn, kernel, extern fn. `body` is None for a forward or extern declaration.

    kernel_block is the declared (x, y, z) block shape (1-D forms padded with 1s);
    kernel_per is "warp" for `per = warp`, else None.
    """
    name: str
    params: list[Param]
    ret: TypeExpr | None            # None means void
    body: Block | None
    is_kernel: bool = False
    kernel_block: tuple[int, int, int] | None = None
    kernel_per: str | None = None
    decorators: list[Attribute] = field(default_factory=list)
    exported: bool = False
    is_extern: bool = False
    link_name: str | None = None
    internal_name: str | None = None
    type_params: list[TypeParam] = field(default_factory=list)   # generics (template)


@dataclass(eq=False)
class TypeParam(Node):
    """`T` or `T: Ordered + Printable` in `<...>`; a `where` clause adds to `bounds`."""
    name: str
    bounds: list[str] = field(default_factory=list)


@dataclass(eq=False)
class ExternKernel(FnDecl):
    """`extern kernel(block = 256) vadd(a: float32*, n: int32);` (is_kernel, is_extern)."""
    is_kernel: bool = True
    is_extern: bool = True


@dataclass(eq=False)
class StructField(Node):
    name: str
    type: TypeExpr


@dataclass(eq=False)
class StructDecl(Stmt):
    name: str
    fields: list[StructField]
    exported: bool = False
    internal_name: str | None = None
    methods: list[FnDecl] = field(default_factory=list)     # `method m(...)`, `this` first
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class TraitDecl(Stmt):
    """`trait Name { fn sig; ... }` (signatures only) or the marker `trait Name;`."""
    name: str
    methods: list[FnDecl]
    exported: bool = False


@dataclass(eq=False)
class ImplDecl(Stmt):
    """`impl Trait for Type { fn ... }`; `Self` in the members means `for_type`."""
    trait: str
    for_type: TypeExpr
    methods: list[FnDecl]
    trait_span: object = None


@dataclass(eq=False)
class EnumVariant(Node):
    name: str
    value: Expr | None = None
    payload: TypeExpr | None = None     # `Number(int64)`: a tagged enum's variant payload


@dataclass(eq=False)
class EnumDecl(Stmt):
    name: str
    variants: list[EnumVariant]
    exported: bool = False
    internal_name: str | None = None
    type_params: list[TypeParam] = field(default_factory=list)   # generic tagged enums

    @property
    def tagged(self) -> bool:
        """An enum is tagged as soon as one variant has a payload (or it is generic)."""
        return bool(self.type_params) or any(v.payload is not None for v in self.variants)


@dataclass(eq=False)
class MatchArm(Node):
    """`case V:` / `case V(b):` (variant, binding) or `default:` (variant None); `body`
    is a Block in the statement form and an Expr in the expression form."""
    variant: str | None
    binding: str | None
    body: Node


@dataclass(eq=False)
class Match(Stmt):
    subject: Expr
    arms: list[MatchArm]


@dataclass(eq=False)
class MatchExpr(Expr):
    subject: Expr
    arms: list[MatchArm]


ImportName = namedtuple("ImportName", ("name", "span"))     # name: str


@dataclass(eq=False)
class Import(Stmt):
    """`import "p";`, `import "p" as a;`, `import { x, y } from "p";`, `... if linux;`."""
    path: str
    alias: str | None = None
    names: list[ImportName] | None = None
    guard: str | None = None        # "linux" | "windows" | None


@dataclass(eq=False)
class Module(Node):
    items: list[Stmt]
    path: str
    embeds: list[ImportStr] = field(default_factory=list)   # its `import_str` expressions

    @property
    def imports(self) -> list[Import]:
        return [i for i in self.items if isinstance(i, Import)]


# Declarations that bind a top-level name (the module loader's export bookkeeping).
TOP_LEVEL_DECLS = (FnDecl, VarDecl, StructDecl, EnumDecl)
