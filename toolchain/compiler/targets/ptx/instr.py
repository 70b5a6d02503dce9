"""PTX instruction objects: what instruction selection builds and printer.py writes.

One `PtxInstr` is one statement of a function body. Kinds:
- OP: `[@[!]guard ]name operands;` where `name` is the dotted opcode (`add.rn.f32`);
  `opcode` is its first component and `mods` the rest (type and modifier suffixes, in
  spelling order); operands are `dsts` then `srcs`;
- LABEL: `name:` (an optional `comment` follows it as `\\t// comment`);
- DIRECTIVE: a body-scope declaration kept as written (`.param .b32 param0`), ends in `;`;
- SCOPE: the `{` / `}` brackets of a call sequence (held in `name`);
- COMMENT: a `// text` line (text in `name`): annotations such as `mtlc.tensor_loop ...`.
Operands are `str`: a register, immediate, symbol or label, or the str subclasses `Addr`
(`[base+offset]`) and `Vec` (`{a, b}`), which also expose their parts. Objects are never mutated after a pass has seen them: passes replace
them (`replaced`), so a list can be shared between a pass's input and output.
"""
from __future__ import annotations

OP, LABEL, DIRECTIVE, SCOPE, COMMENT = "op", "label", "directive", "scope", "comment"

# Opcodes (first component) whose operands are all sources: no register is written.
NO_DEST = frozenset({"st", "bra", "brx", "bar", "barrier", "trap", "ret", "exit", "call",
                     "fence", "membar", "red", "prefetch", "prefetchu", "stmatrix",
                     "griddepcontrol", "nanosleep", "pmevent", "cp", "stackrestore",
                     "applypriority", "discard", "setmaxnreg"})


class Addr(str):
    """A memory operand `[base]` / `[base+offset]`; `base` is a register or a symbol.

    It is its own PTX text (a `str`), so the printer joins operands without looking at
    them; `base` and `offset` read the parts back."""
    __slots__ = ()

    def __new__(cls, base: str, offset: int = 0):
        return str.__new__(cls, f"[{base}+{offset}]" if offset else f"[{base}]")

    @property
    def base(self) -> str:
        return self[1:-1].partition("+")[0]

    @property
    def offset(self) -> int:
        off = self[1:-1].partition("+")[2]
        return int(off) if off else 0


class Vec(str):
    """A vector operand `{a, b, ...}` of registers (or `_` sinks); its own PTX text, with
    `regs` giving the elements."""
    __slots__ = ()

    def __new__(cls, regs):
        return str.__new__(cls, "{" + ", ".join(regs) + "}")

    @property
    def regs(self) -> tuple[str, ...]:
        return tuple(self[1:-1].split(", "))


def dest_count(name: str) -> int:
    """How many leading operands an instruction named `name` writes (0 or 1)."""
    base = name.split(".", 1)[0]
    if base in NO_DEST or name.startswith(("wmma.store", "mbarrier.init", "tcgen05.st",
                                           "wgmma.fence", "mbarrier.arrive_drop.noComplete")):
        return 0
    return 1


class PtxInstr:
    __slots__ = ("kind", "name", "dsts", "srcs", "guard", "negated", "comment")

    def __init__(self, kind: str, name: str, dsts: tuple = (), srcs: tuple = (),
                 guard: str | None = None, negated: bool = False,
                 comment: str | None = None):
        self.kind = kind
        self.name = name
        self.dsts = dsts
        self.srcs = srcs
        self.guard = guard
        self.negated = negated
        self.comment = comment

    # `opcode` and `mods` are derived from `name` on demand: most instructions are only
    # ever printed, and splitting every name up front cost more than the rest of the object.
    @property
    def opcode(self) -> str:
        return self.name.partition(".")[0] if self.kind == OP else self.name

    @property
    def mods(self) -> tuple[str, ...]:
        if self.kind != OP:
            return ()
        rest = self.name.partition(".")[2]
        return tuple(rest.split(".")) if rest else ()

    @property
    def operands(self) -> tuple:
        return self.dsts + self.srcs

    def replaced(self, **changes) -> "PtxInstr":
        """A copy with some fields changed (`name`, `dsts`, `srcs`, `guard`, `negated`)."""
        fields = {"dsts": self.dsts, "srcs": self.srcs, "guard": self.guard,
                  "negated": self.negated, "comment": self.comment}
        name = changes.pop("name", self.name)
        fields.update(changes)
        return PtxInstr(self.kind, name, **fields)

    def __repr__(self) -> str:
        from .printer import format_instr
        return f"PtxInstr({format_instr(self)!r})"


def op(name: str, dsts: tuple, srcs: tuple, guard: str | None = None,
       negated: bool = False) -> PtxInstr:
    return PtxInstr(OP, name, dsts, srcs, guard, negated)


def label(name: str, comment: str | None = None) -> PtxInstr:
    return PtxInstr(LABEL, name, comment=comment)


def directive(text: str) -> PtxInstr:
    return PtxInstr(DIRECTIVE, text)


def comment(text: str) -> PtxInstr:
    return PtxInstr(COMMENT, text)


def scope(bracket: str) -> PtxInstr:
    return PtxInstr(SCOPE, bracket)


class PtxFunction:
    """One `.entry` / `.func`: its header text, declarations, registers and body."""
    __slots__ = ("name", "kind", "head", "params", "reg_decls", "decls", "body")

    def __init__(self, name: str, kind: str, head: str, params: list[str],
                 reg_decls: list[str], decls: list[str], body: list[PtxInstr]):
        self.name, self.kind, self.head, self.params = name, kind, head, params
        self.reg_decls, self.decls, self.body = reg_decls, decls, body


class PtxModule:
    """A whole module: header lines, module-scope declarations, functions in order."""
    __slots__ = ("version", "target", "header", "decls", "functions")

    def __init__(self, version: str, target: str, header: list[str], decls: list[str],
                 functions: list[PtxFunction]):
        self.version, self.target, self.header = version, target, header
        self.decls, self.functions = decls, functions

    def function(self, name: str) -> PtxFunction:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def text(self) -> str:
        from .printer import format_module
        return format_module(self)
