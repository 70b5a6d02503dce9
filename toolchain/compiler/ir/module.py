"""IR values and containers: constants, parameters, instructions, blocks, functions, modules.

Invariants (checked by `verify.verify_module`):
- Instructions are values (SSA temporaries): each is defined once and used after its
  definition; mutable source variables are `Local` slots read and written with
  `local.get`/`local.set`, so no phi nodes are needed.
- Every block ends with exactly one terminator; `br`/`cbr` name their successors in
  `Instr.targets` (cbr: [then, else]).
- A `Function` with `kind == "kernel"` is a GPU entry point; `kind == "extern"` has no blocks.
- Globals and functions used as operands denote their address.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .types import FnPtrType, PtrType, Type


class Value:
    type: Type


@dataclass(eq=False)
class Const(Value):
    """A scalar constant: int, float, bool, or the null pointer (value 0)."""
    type: Type
    value: Any

    def __repr__(self) -> str:
        return f"Const({self.type}, {self.value!r})"


@dataclass(eq=False)
class Param(Value):
    type: Type
    name: str
    index: int


@dataclass(eq=False)
class Undef(Value):
    type: Type


@dataclass(eq=False)
class Local:
    """A mutable, never-address-taken variable slot of scalar or aggregate type."""
    type: Type
    name: str


@dataclass(eq=False)
class Instr(Value):
    op: str
    type: Type
    operands: list[Any] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    targets: list["Block"] = field(default_factory=list)
    span: Any = None          # diagnostics.Span of the source construct, when known
    block: "Block | None" = None

    def __repr__(self) -> str:
        return f"Instr({self.op}, {self.type})"


@dataclass(eq=False)
class Block:
    name: str
    instrs: list[Instr] = field(default_factory=list)
    function: "Function | None" = None

    @property
    def terminator(self) -> Instr | None:
        if self.instrs and self.instrs[-1].op in ("br", "cbr", "ret", "unreachable"):
            return self.instrs[-1]
        return None

    @property
    def successors(self) -> list["Block"]:
        term = self.terminator
        return list(term.targets) if term is not None else []


@dataclass(eq=False)
class Function(Value):
    name: str
    params: list[Param]
    ret: Type
    kind: str = "function"            # "function" | "kernel" | "extern"
    blocks: list[Block] = field(default_factory=list)
    locals: list[Local] = field(default_factory=list)
    linkage: str = "internal"         # "internal" | "export" | "import"
    link_name: str | None = None      # symbol name for externs
    block_shape: tuple[int, int, int] | None = None   # kernel(block = ...)
    per_warp: bool = False            # kernel(..., per = warp)
    attrs: dict[str, Any] = field(default_factory=dict)
    span: Any = None

    @property
    def type(self) -> Type:  # type: ignore[override]
        return FnPtrType(tuple(p.type for p in self.params), self.ret)

    @property
    def is_kernel(self) -> bool:
        return self.kind == "kernel"

    @property
    def is_extern(self) -> bool:
        return self.kind == "extern"

    @property
    def symbol(self) -> str:
        return self.link_name or self.name

    def instructions(self):
        for b in self.blocks:
            yield from b.instrs


@dataclass(eq=False)
class Global(Value):
    """Module-scope storage. `init` is None (zeroed), bytes, or a list of
    (offset, Type, value) items where value is an int, float, Global or Function."""
    name: str
    value_type: Type
    init: Any = None
    constant: bool = False
    space: str = "generic"
    linkage: str = "internal"         # "internal" | "export" | "import"
    link_name: str | None = None

    @property
    def type(self) -> Type:  # type: ignore[override]
        return PtrType(self.value_type, self.space)

    @property
    def symbol(self) -> str:
        return self.link_name or self.name


@dataclass(eq=False)
class KernelDecl:
    """An `extern kernel` (or a kernel of this module) known to typed dispatch."""
    name: str
    params: list[Type]
    block_shape: tuple[int, int, int] | None = None
    per_warp: bool = False


@dataclass(eq=False)
class Module:
    name: str
    functions: dict[str, Function] = field(default_factory=dict)
    globals: dict[str, Global] = field(default_factory=dict)
    kernel_decls: dict[str, KernelDecl] = field(default_factory=dict)
    structs: dict[str, Type] = field(default_factory=dict)

    def kernels(self) -> list[Function]:
        return [f for f in self.functions.values() if f.is_kernel]
