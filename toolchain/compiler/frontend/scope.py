"""Symbols and lexical scopes used by the checker/lowering.

A symbol says what a name denotes and how lowering reaches its storage:
- VarSym.storage is one of: an ir `Local` (scalar, never address-taken), an address value
  (alloca / gpu.alloc / Global / dynamic-shared view), an ir `Param` (read-only scalar
  parameter that was never assigned or address-taken), or a Python constant (folded const).
- FnSym wraps the ir Function (or None for a kernel known only as `extern kernel`).

Invariant: scopes nest by blocks; lookup walks outward; shadowing in an inner block is legal.
"""
from __future__ import annotations

from ...records import dataclass, field

from ..diagnostics import Span
from ..ir.types import Type


@dataclass(eq=False)
class VarSym:
    name: str
    type: Type
    kind: str                       # "local" | "param" | "global" | "const" | "gpu"
    storage: object = None
    span: Span | None = None
    needs_init: bool = False        # a scalar local declared without initializer
    enum: str | None = None         # enum name when declared with an enum type
    storage_class: str = "none"     # "workgroup" | "private" for gpu vars
    is_const: bool = False
    reported_uninit: bool = False
    poisoned: bool = False          # declared by error recovery: a use ends its statement


@dataclass(eq=False)
class FnSym:
    name: str
    decl: object                    # ast.FnDecl
    params: list[Type]
    ret: Type
    fn: object = None               # ir Function (None for extern kernels)
    is_kernel: bool = False
    is_extern: bool = False
    ret_enum: str | None = None
    block_shape: tuple[int, int, int] | None = None
    per_warp: bool = False


@dataclass(eq=False)
class TypeSym:
    name: str
    type: Type
    enum: str | None = None         # set for enums (type is I64)


@dataclass(eq=False)
class ModuleAlias:
    """`import "path" as name;`: `name.x` reaches module `path`'s public name `x`."""
    name: str
    path: str                       # as messages name the module (LoadedModule.shown)
    public: frozenset
    hidden: frozenset


@dataclass
class Scope:
    parent: Scope | None = None
    names: dict[str, object] = field(default_factory=dict)

    def lookup(self, name: str) -> object:
        s: Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def child(self) -> "Scope":
        return Scope(self)
