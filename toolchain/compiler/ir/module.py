"""IR values and containers: constants, parameters, instructions, blocks, functions, modules.

Invariants (checked by `verify.verify_module`):
- Instructions are values (SSA temporaries): each is defined once and its definition
  dominates every use. The frontend writes mutable source variables as `Local` slots read
  and written with `local.get`/`local.set`; backends consume exactly that form.
- SSA form (optimizer only): `opt/mem2reg.py` promotes scalar locals to values merged by
  `phi` instructions (GPU -O: the frontend builds that form itself, `ssa_builder.py`). A phi is an ordinary `Instr` whose operand i flows in from
  predecessor `targets[i]` (phis, not block parameters: the existing `Instr` already
  carries blocks in `targets`, and every consumer of terminators keeps working). Phis open
  their block; `opt/out_of_ssa.py` turns them back into locals before any backend runs.
- Use lists are an on-demand analysis (`UseMap`), not fields kept on values: the frontend
  and backends edit `operands` freely, and a pass that changes IR rebuilds or updates it.
- Every block ends with exactly one terminator; `br`/`cbr` name their successors in
  `Instr.targets` (cbr: [then, else]).
- A `Function` with `kind == "kernel"` is a GPU entry point; `kind == "extern"` has no blocks.
- Globals and functions used as operands denote their address.
"""
from __future__ import annotations

from ...records import dataclass, field

from .remarks import Remarks
from .types import FnPtrType, PtrType, Type


class Value:
    type: Type


@dataclass(eq=False)
class Const(Value):
    """A scalar constant: int, float, bool, or the null pointer (value 0)."""
    type: Type
    value: object

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
    operands: list[object] = field(default_factory=list)
    attrs: dict[str, object] = field(default_factory=dict)
    targets: list["Block"] = field(default_factory=list)
    span: object = None       # diagnostics.Span of the source construct, when known
    block: "Block | None" = None

    def __repr__(self) -> str:
        return f"Instr({self.op}, {self.type})"

    @property
    def incoming(self) -> list[tuple[object, "Block"]]:
        """A phi's (value, predecessor) pairs."""
        return list(zip(self.operands, self.targets))

    def erase(self) -> None:
        """Unlink from its block (callers drop its uses from a live UseMap first)."""
        if self.block is not None:
            self.block.instrs.remove(self)
            self.block = None

    def clone(self) -> "Instr":
        """A detached copy with the same operands, attrs, targets and span."""
        return Instr(self.op, self.type, list(self.operands), dict(self.attrs),
                     list(self.targets), self.span, None)


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

    @property
    def phis(self) -> list[Instr]:
        out = []
        for ins in self.instrs:
            if ins.op != "phi":
                break
            out.append(ins)
        return out

    def first_non_phi(self) -> int:
        i = 0
        while i < len(self.instrs) and self.instrs[i].op == "phi":
            i += 1
        return i

    def insert(self, index: int, ins: Instr) -> Instr:
        ins.block = self
        self.instrs.insert(index, ins)
        return ins

    def insert_before(self, anchor: Instr, ins: Instr) -> Instr:
        return self.insert(self.instrs.index(anchor), ins)

    def append(self, ins: Instr) -> Instr:
        ins.block = self
        self.instrs.append(ins)
        return ins


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
    attrs: dict[str, object] = field(default_factory=dict)
    span: object = None

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
    init: object = None
    constant: bool = False
    space: str = "generic"
    linkage: str = "internal"         # "internal" | "export" | "import"
    link_name: str | None = None
    span: object = None               # the source declaration, where a frontend gives one

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


class UseMap:
    """Use lists of one function, on demand: value -> the instructions using it (one entry
    per operand slot). Keyed by the value objects themselves (identity hashing), so no
    `id()` side tables. Passes that edit operands go through `set_operand`, `replace_all`,
    `add` and `drop` to keep it exact, or let the pass manager rebuild it."""

    def __init__(self, fn: "Function"):
        self.users: dict[object, list[Instr]] = {}
        for b in fn.blocks:
            for ins in b.instrs:
                self.add(ins)

    def add(self, ins: Instr) -> None:
        for o in ins.operands:
            if isinstance(o, (Instr, Param)):
                self.users.setdefault(o, []).append(ins)

    def drop(self, ins: Instr) -> None:
        for o in ins.operands:
            us = self.users.get(o)
            if us is not None and ins in us:
                us.remove(ins)

    def uses(self, v) -> list[Instr]:
        return self.users.get(v, [])

    def used(self, v) -> bool:
        return bool(self.users.get(v))

    def set_operand(self, user: Instr, index: int, new) -> None:
        old = user.operands[index]
        us = self.users.get(old)
        if us is not None and user in us:
            us.remove(user)
        user.operands[index] = new
        if isinstance(new, (Instr, Param)):
            self.users.setdefault(new, []).append(user)

    def replace_all(self, old, new) -> None:
        """replace_all_uses_with: every operand slot holding `old` now holds `new`."""
        if old is new:
            return
        users = self.users.pop(old, [])
        track = isinstance(new, (Instr, Param))
        for u in dict.fromkeys(users):
            ops = u.operands
            for k, o in enumerate(ops):
                if o is old:
                    ops[k] = new
                    if track:
                        self.users.setdefault(new, []).append(u)

    def erase(self, ins: Instr, sweep: set | None = None) -> None:
        """Drop `ins`'s operand uses and unlink it. With `sweep`, the block list keeps it
        until the caller calls `sweep_blocks` (one pass over each block, not one list
        removal per instruction: folding a large unrolled block would be quadratic)."""
        self.drop(ins)
        self.users.pop(ins, None)
        if sweep is None:
            ins.erase()
        else:
            sweep.add(ins)


def sweep_blocks(fn: "Function", dead: set) -> None:
    """Remove the instructions of `dead` (erased with `UseMap.erase(ins, dead)`)."""
    if not dead:
        return
    for b in fn.blocks:
        if any(i in dead for i in b.instrs):
            b.instrs = [i for i in b.instrs if i not in dead]
    for i in dead:
        i.block = None
    dead.clear()


def const_int(v) -> int | None:
    """The integer value of `v` seen through `convert`s, else None (for indices and
    extents, small enough that a convert keeps them)."""
    while isinstance(v, Instr) and v.op == "convert" and len(v.operands) == 1:
        v = v.operands[0]
    return v.value if isinstance(v, Const) and isinstance(v.value, int) else None


def replace_all_uses_with(fn: "Function", old, new) -> list["Instr"]:
    """One-off RAUW without a live UseMap (walks the function); the users, in block
    order."""
    users = []
    for b in fn.blocks:
        for ins in b.instrs:
            ops = ins.operands
            if old in ops:                  # (values compare by identity)
                for k, o in enumerate(ops):
                    if o is old:
                        ops[k] = new
                users.append(ins)
    return users


@dataclass(eq=False)
class Module:
    name: str
    functions: dict[str, Function] = field(default_factory=dict)
    globals: dict[str, Global] = field(default_factory=dict)
    kernel_decls: dict[str, KernelDecl] = field(default_factory=dict)
    structs: dict[str, Type] = field(default_factory=dict)
    remarks: Remarks = field(default_factory=Remarks)   # --explain: passes and backends

    def kernels(self) -> list[Function]:
        return [f for f in self.functions.values() if f.is_kernel]
