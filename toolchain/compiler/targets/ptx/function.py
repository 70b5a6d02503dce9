"""Per-function PTX emission state: virtual registers, operands, labels, locals.

Invariants:
- every IR SSA value gets its own virtual register (ptxas allocates physical ones), except a
  `local.get` whose uses all precede the next `local.set` of that local in the same block:
  it simply names the local's register (no copy), which is what keeps loops free of movs;
- constants become immediates where PTX accepts them; `reg()` materializes when it does not;
- IR Locals (never address-taken, scalar) map to one register each; aggregate locals are
  refused (E0505) because device code never needs them (aggregates live behind pointers);
- blocks are emitted in IR order, so a branch to the next block is a fall-through.
The opcode -> lowering table is assembled from the lower_* modules by `emitter.py`.
"""
from __future__ import annotations

from typing import Any, Callable

from ...diagnostics import error
from ...ir.module import Const, Function, Global, Instr, Local, Param, Undef
from ...ir.types import BoolType, Type
from . import regs

LOCAL_OPS = ("local.get", "local.set")


def _alias_gets(fn: Function) -> set[int]:
    """ids of `local.get`s that may name the local's register directly (see module doc)."""
    last_use: dict[int, int] = {}                  # id(get) -> last position in its block
    escapes: set[int] = set()                      # gets used outside their own block
    for b in fn.blocks:
        for pos, ins in enumerate(b.instrs):
            for o in ins.operands:
                if isinstance(o, Instr) and o.op == "local.get":
                    if o.block is not b:
                        escapes.add(id(o))
                    last_use[id(o)] = pos
    ok: set[int] = set()
    for b in fn.blocks:
        open_gets: dict[int, list[Instr]] = {}
        for pos, ins in enumerate(b.instrs):
            if ins.op == "local.get" and id(ins) not in escapes:
                open_gets.setdefault(id(ins.operands[0]), []).append(ins)
            elif ins.op == "local.set":
                for g in open_gets.pop(id(ins.operands[0]), []):
                    if last_use.get(id(g), -1) < pos:
                        ok.add(id(g))
        for gets in open_gets.values():
            ok.update(id(g) for g in gets)
    return ok


def _users(fn: Function) -> dict[int, list[tuple[Instr, int]]]:
    """id(instr) -> [(user, operand index)] in program order, built once per function for
    both absorption analyses below."""
    users: dict[int, list[tuple[Instr, int]]] = {}
    for b in fn.blocks:
        for ins in b.instrs:
            for k, o in enumerate(ins.operands):
                if isinstance(o, Instr):
                    users.setdefault(id(o), []).append((ins, k))
    return users


def _absorbed_converts(fn: Function, alias_gets: set[int],
                       users: dict[int, list[tuple[Instr, int]]]) -> set[int]:
    """ids of i32 -> i64 converts used only as scaled ptradd indices: every ptradd reads the
    32-bit source with mul.wide instead (lower_memory.wide_source), so no cvt is emitted."""
    out = set()
    for b in fn.blocks:
        for ins in b.instrs:
            if ins.op != "convert" or id(ins) not in users:
                continue
            src = ins.operands[0]
            if not (src.type.is_int and src.type.bits == 32 and ins.type.is_int
                    and ins.type.bits == 64) or isinstance(src, Const) \
                    or (isinstance(src, Instr) and id(src) in alias_gets):
                continue
            if all(u.op == "ptradd" and k == 1 and u.operands[0].type.pointee.size > 1
                   for u, k in users[id(ins)]):
                out.add(id(ins))
    return out


def _absorbed_addresses(fn: Function, alias_gets: set[int],
                        users: dict[int, list[tuple[Instr, int]]]) -> set[int]:
    """ids of constant-offset address instructions whose every use is the address of a
    load/store: lower_memory.address folds them into `[base+imm]`, so none is emitted.
    The base conditions mirror lower_memory.address exactly."""
    out = set()
    for b in fn.blocks:
        for ins in b.instrs:
            if not _const_offset_op(ins) or id(ins) not in users:
                continue
            base = ins.operands[0]
            if isinstance(base, (Const, Global)) or (isinstance(base, Instr)
                                                     and id(base) in alias_gets):
                continue
            if all(u.op in ("load", "store") and k == 0 for u, k in users[id(ins)]):
                out.add(id(ins))
    return out


def _const_offset_op(ins: Instr) -> bool:
    return ins.op == "fieldptr" or (ins.op in ("ptradd", "byteadd")
                                    and isinstance(ins.operands[1], Const))


class FnEmitter:
    """Emits one `.entry` or `.func`; `module` is the emitter.ModuleEmitter (names, decls)."""

    def __init__(self, module: Any, fn: Function, table: dict[str, Callable]):
        self.module = module
        self.profile = module.profile
        self.gpu_checks = module.gpu_checks
        self.tensor_tuple_budget = module.tensor_tuple_budget
        self.fn = fn
        self.table = table
        self.counts = {c: 0 for c in regs.CLASSES}
        self.body: list[str] = []
        self.decls: list[str] = []            # function-scope .local arrays
        self.vals: dict[int, str] = {}
        self.local_regs: dict[int, str] = {}
        self.alias_gets = _alias_gets(fn)
        self.labels = {id(b): f"$L__BB{i}" for i, b in enumerate(fn.blocks)}
        self.next_block = None
        self.block_cache: dict = {}           # per-block memo of derived values (CSE)
        users = _users(fn)
        self.absorbed = _absorbed_converts(fn, self.alias_gets, users) | \
            _absorbed_addresses(fn, self.alias_gets, users)
        self.uniq = 0

    # ---- registers and operands ------------------------------------------------------
    def new(self, cls: str) -> str:
        self.counts[cls] += 1
        return f"{regs.CLASSES[cls][0]}{self.counts[cls]}"

    def new_t(self, t: Type) -> str:
        return self.new(regs.rclass(t))

    def unique(self, stem: str) -> str:
        self.uniq += 1
        return f"{stem}{self.uniq}"

    def emit(self, line: str) -> None:
        self.body.append("\t" + line + ";")

    def raw(self, line: str) -> None:
        self.body.append(line)

    def define(self, ins: Instr, reg: str) -> str:
        self.vals[id(ins)] = reg
        return reg

    def result(self, ins: Instr) -> str:
        """A fresh register for `ins`, recorded as its value."""
        return self.define(ins, self.new_t(ins.type))

    def val(self, v: Any) -> str:
        """Operand text: an immediate for numeric constants, else a register."""
        if isinstance(v, Const) and not isinstance(v.type, BoolType):
            return regs.imm(v.type, v.value)
        if isinstance(v, Undef) and not isinstance(v.type, BoolType):
            return regs.imm(v.type, 0)
        return self.reg(v)

    def reg(self, v: Any) -> str:
        """Operand text that is always a register (constants and addresses materialized)."""
        r = self.vals.get(id(v))
        if r is not None and isinstance(v, (Instr, Param)):
            return r
        if isinstance(v, (Const, Undef)):
            r = self.new_t(v.type)
            value = v.value if isinstance(v, Const) else 0
            self.emit(f"mov.{'pred' if r.startswith('%p') else regs.bits(v.type)} {r}, "
                      f"{regs.imm(v.type, value)}")
            return r
        if isinstance(v, Global):
            return self.module.global_address(self, v)
        if isinstance(v, Function):
            raise error("E0505", f"the address of function `{v.name}` cannot be taken in "
                        "device code (PTX has no indirect calls here)", getattr(v, "span", None))
        raise error("E0900", f"PTX backend: value {v!r} used before its definition")

    def local_reg(self, loc: Local) -> str:
        r = self.local_regs.get(id(loc))
        if r is None:
            if not loc.type.is_scalar:
                raise error("E0505", f"aggregate local `{loc.name}: {loc.type}` is not "
                            "supported in device code; use a private array")
            r = self.local_regs[id(loc)] = self.new_t(loc.type)
        return r

    # ---- driver ----------------------------------------------------------------------
    def load_params(self, names: list[str]) -> None:
        entry = self.fn.is_kernel
        for p, name in zip(self.fn.params, names):
            r = self.new_t(p.type)
            if isinstance(p.type, BoolType):
                tmp = self.new("rs" if entry else "r")
                self.emit(f"ld.param.{'u8' if entry else 'b32'} {tmp}, [{name}]")
                self.emit(f"setp.ne.{'u16' if entry else 'u32'} {r}, {tmp}, 0")
            else:
                self.emit(f"ld.param{regs.param_type(p.type, entry)} {r}, [{name}]")
            self.vals[id(p)] = r

    def lower_body(self) -> None:
        blocks = self.fn.blocks
        for i, b in enumerate(blocks):
            self.next_block = blocks[i + 1] if i + 1 < len(blocks) else None
            self.raw(f"{self.labels[id(b)]}:\t// {b.name}")
            self.block_cache = {}
            for ins in b.instrs:
                handler = self.table.get(ins.op)
                if handler is None:
                    raise error("E0505", f"operation {ins.op} cannot be emitted as PTX",
                                ins.span)
                if id(ins) not in self.absorbed:
                    handler(self, ins)

    def reg_decls(self) -> list[str]:
        out = []
        for c in regs.CLASS_ORDER:
            if self.counts[c]:
                prefix, decl = regs.CLASSES[c]
                out.append(f"\t.reg {decl} \t{prefix}<{self.counts[c] + 1}>;")
        return out
