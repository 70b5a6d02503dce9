"""Symbols and lexical scopes used by the checker/lowering.

A symbol says what a name denotes and how lowering reaches its storage:
- VarSym.storage is one of: an ir `Local` (scalar, never address-taken), an address value
  (alloca / gpu.alloc / Global / dynamic-shared view), an ir `Param` (read-only scalar
  parameter that was never assigned or address-taken), or a Python constant (folded const).
- FnSym wraps the ir Function (or None for a kernel known only as `extern kernel`).

Invariant: scopes nest by blocks; lookup walks outward; shadowing in an inner block is legal.
"""
from __future__ import annotations

from ..ir.records import dataclass, field
from typing import Any, Optional

from ..diagnostics import Span
from ..ir.types import Type


@dataclass(eq=False)
class VarSym:
    name: str
    type: Type
    kind: str                       # "local" | "param" | "global" | "const" | "gpu"
    storage: Any = None
    span: Optional[Span] = None
    needs_init: bool = False        # a scalar local declared without initializer
    enum: Optional[str] = None      # enum name when declared with an enum type
    storage_class: str = "none"     # "workgroup" | "private" for gpu vars
    is_const: bool = False
    reported_uninit: bool = False


@dataclass(eq=False)
class FnSym:
    name: str
    decl: Any                       # ast.FnDecl
    params: list[Type]
    ret: Type
    fn: Any = None                  # ir Function (None for extern kernels)
    is_kernel: bool = False
    is_extern: bool = False
    ret_enum: Optional[str] = None
    block_shape: Optional[tuple[int, int, int]] = None
    per_warp: bool = False


@dataclass(eq=False)
class TypeSym:
    name: str
    type: Type
    enum: Optional[str] = None      # set for enums (type is I64)


@dataclass
class Scope:
    parent: Optional["Scope"] = None
    names: dict[str, Any] = field(default_factory=dict)

    def lookup(self, name: str) -> Any:
        s: Optional[Scope] = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def child(self) -> "Scope":
        return Scope(self)
