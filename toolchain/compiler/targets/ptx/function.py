"""Per-function PTX emission state: virtual registers, operands, labels, locals.

Invariants:
- every IR SSA value gets its own virtual register (ptxas allocates physical ones), except a
  `local.get` whose uses all precede the next `local.set` of that local in the same block:
  it simply names the local's register (no copy), which is what keeps loops free of movs;
- constants become immediates where PTX accepts them; `reg()` materializes when it does not;
- IR Locals (never address-taken) map to one register each, an aggregate one to its chunk
  registers (lower_aggregate.py: aggregate values, parameters and results);
- blocks are emitted in IR order, so a branch to the next block is a fall-through.
The opcode -> lowering table is assembled from the lower_* modules by `emitter.py`.
Lowerings append `PtxInstr` objects (instr.py) through `op` (one destination), `effect`
(none), `label`, and `put` (instructions built by ops.py's typed constructors); there is no
text entry point: no PTX instruction is written as text and parsed back.
"""
from __future__ import annotations

from collections.abc import Callable

from ...diagnostics import CompileError, Diagnostic, error
from ...ir.module import Const, Function, Global, Instr, Local, Param, Undef, UseMap
from ...ir.types import BoolType, Type
from . import lower_aggregate, lower_memory, ops as I, promote, regs
from .instr import LABEL, OP, Addr, PtxInstr

LOCAL_OPS = ("local.get", "local.set")


_OFFSET_OPS = ("fieldptr", "ptradd", "byteadd", "bitcast")


def _const_offset_op(ins: Instr) -> bool:
    return ins.op == "fieldptr" or (ins.op in ("ptradd", "byteadd")
                                    and isinstance(ins.operands[1], Const)) or \
        (ins.op == "bitcast" and ins.type.is_ptr and ins.operands[0].type.is_ptr)


def _alias_gets(fn: Function, uses: UseMap) -> set[Instr]:
    """The `local.get`s that may name their local's register directly (module doc): every
    use is in the get's own block, before the next `local.set` of that local."""
    alias: set[Instr] = set()
    for b in fn.blocks:
        for ins in b.instrs:
            if ins.op == "local.get":
                break
        else:
            continue        # no get (most blocks under -O: out-of-SSA's gets open a block)
        pos: dict[Instr, int] = {}
        open_gets: dict[Local, list[Instr]] = {}
        for p, ins in enumerate(b.instrs):
            pos[ins] = p
            if ins.op == "local.get":
                open_gets.setdefault(ins.operands[0], []).append(ins)
            elif ins.op == "local.set":
                for g in open_gets.pop(ins.operands[0], ()):
                    if all(u.block is b and pos.get(u, p) < p for u in uses.uses(g)):
                        alias.add(g)
        for gets in open_gets.values():
            alias.update(g for g in gets if all(u.block is b for u in uses.uses(g)))
    return alias


def _absorbed(fn: Function, uses: UseMap, alias: set[Instr],
              patterns: dict[Instr, Callable]) -> set[Instr]:
    """Instructions whose every use folds them into an isel pattern, so they are not
    emitted on their own (lower_memory):
    - an i32 -> i64 convert read only as a scaled index: a `ptradd` index over elements
      wider than a byte, or a `mul` by a constant (index-scale's shared `i * size`); each
      reads the 32-bit source with mul.wide (lower_memory.wide_source);
    - a constant-offset address (or a pointer bitcast: load-combine's vector view) whose
      every use is the address of a load/store, the global source of a tile.cp16, or
      another such absorbed address (folded into `[base+imm]` by lower_memory.address,
      whose base conditions this mirrors)."""
    out: set[Instr] = set()
    memo: dict[Instr, bool] = {}

    def folds(ins: Instr) -> bool:
        got = memo.get(ins)
        if got is None:
            memo[ins] = False
            base = ins.operands[0]
            users = uses.uses(ins)
            got = memo[ins] = bool(users) and not isinstance(base, (Const, Global)) \
                and base not in alias and all(_address_use(u, ins, folds) for u in users)
        return got

    for b in fn.blocks:
        for ins in b.instrs:
            users = uses.uses(ins)
            if not users:
                continue
            if ins.op == "convert":
                src = ins.operands[0]
                if src.type.is_int and src.type.bits == 32 and ins.type.is_int \
                        and ins.type.bits == 64 and not isinstance(src, Const) \
                        and src not in alias \
                        and all(_scales(u, ins, patterns) for u in users):
                    out.add(ins)
            elif ins.op in _OFFSET_OPS and _const_offset_op(ins) and folds(ins):
                out.add(ins)
    return out


def _address_use(u: Instr, ins: Instr, folds) -> bool:
    if u.op in ("load", "store"):
        return u.operands[0] is ins and ins not in u.operands[1:]
    if u.op == "tile.cp16":         # the global source of a 16-byte copy (lower_tile)
        return u.operands[1] is ins and ins.type.space == "global" \
            and ins not in (u.operands[0], u.operands[2])
    return u.op in _OFFSET_OPS and u.operands[0] is ins and _const_offset_op(u) and folds(u)


def _patterns(fn: Function, uses: UseMap, alias: set[Instr]) -> dict[Instr, Callable]:
    """Instructions lowered by an isel pattern instead of their op's table entry: a byte
    offset `mul i64 ..., C` read only by `byteadd`s (index-scale's shared `i * size`) is
    mul.wide of the 32-bit source of a widened index (not a mutable local), else shl.b64
    for a power of two, as lower_memory.scaled_index does for a lone ptradd."""
    out: dict[Instr, Callable] = {}
    for b in fn.blocks:
        for ins in b.instrs:
            if ins.op != "mul" or not _offset_only(ins, uses):
                continue
            w = lower_memory.wide_factor(ins)
            if w is not None and w[0].operands[0] not in alias:
                out[ins] = lower_memory.lower_mul_wide
            elif lower_memory.pow2_factor(ins) is not None:
                out[ins] = lower_memory.lower_mul_pow2
    return out


def _offset_only(ins: Instr, uses: UseMap) -> bool:
    users = uses.uses(ins)
    return bool(users) and all(u.op == "byteadd" and u.operands[0] is not ins
                               for u in users)


def _scales(user: Instr, index: Instr, patterns: dict[Instr, Callable]) -> bool:
    """Whether `user` reads `index` only as an index it scales (see `_absorbed`). A `mul`
    does when `_patterns` made it mul.wide of index's source (the caller checked that this
    source is no mutable local, the one further condition `_patterns` has)."""
    a, b = user.operands[0], user.operands[1] if len(user.operands) > 1 else None
    if user.op == "ptradd":
        return a is not index and b is index and a.type.pointee.size > 1
    if user.op == "mul":
        return patterns.get(user) is lower_memory.lower_mul_wide
    return False


class FnEmitter:
    """Emits one `.entry` or `.func`; `module` is the emitter.ModuleEmitter (names, decls)."""

    def __init__(self, module: object, fn: Function, table: dict[str, Callable]):
        self.module = module
        self.profile = module.profile
        self.gpu_checks = module.gpu_checks
        self.tensor_tuple_budget = module.tensor_tuple_budget
        self.contract = module.fp_contract      # plain add/sub/mul.fN (lower_arith)
        self.contracted: list[Instr] = []       # add/sub fed by a multiply (a remark)
        self.constant_width = False             # subgroup_size() lowered to 32 (a remark)
        self.fn = fn
        self.table = table
        self.counts = {c: 0 for c in regs.CLASSES}
        self.body: list[PtxInstr] = []
        self.kept: set[int] = set()           # ids of `put` instructions: peepholes keep them
        self.decls: list[str] = []            # function-scope .local arrays
        self.vals: dict[int, str] = {}
        self.imms: dict[int, str] = {}        # IR values known to be an immediate
        self.forward: set[int] = set()        # values used before their definition
        self.local_regs: dict[int, str] = {}
        uses = UseMap(fn)
        self.alias_gets = _alias_gets(fn, uses)           # local.gets naming the register
        self.patterns = _patterns(fn, uses, self.alias_gets)      # instr -> isel pattern
        self.absorbed = _absorbed(fn, uses, self.alias_gets, self.patterns)   # by users
        self.slots = promote.Slots(fn, uses)    # allocas kept in registers (promote.py)
        self.absorbed |= self.slots.absorbed
        self.labels = {id(b): f"$L__BB{i}" for i, b in enumerate(fn.blocks)}
        self.next_block = None
        self.block_cache: dict = {}           # per-block memo of special-register reads
        self.uniq = 0

    # ---- registers and operands ------------------------------------------------------
    def new(self, cls: str) -> str:
        self.counts[cls] += 1
        return f"{regs.CLASSES[cls][0]}{self.counts[cls]}"

    def new_t(self, t: Type) -> str:
        if t.is_aggregate:
            return lower_aggregate.new_value(self, t)
        return self.new(regs.rclass(t))

    def unique(self, stem: str) -> str:
        self.uniq += 1
        return f"{stem}{self.uniq}"

    def op(self, name: str, dst, *srcs, guard: str | None = None,
           negated: bool = False) -> None:
        """Append `name dst, srcs...` (dst is the one operand the instruction writes)."""
        self.body.append(PtxInstr(OP, name, (dst,), srcs, guard, negated))

    def effect(self, name: str, *srcs, guard: str | None = None,
               negated: bool = False) -> None:
        """Append an instruction that writes no register (st, bra, bar, trap, ...)."""
        self.body.append(PtxInstr(OP, name, (), srcs, guard, negated))

    def label(self, name: str, comment: str | None = None) -> None:
        self.body.append(PtxInstr(LABEL, name, comment=comment))

    def append(self, ins: PtxInstr) -> None:
        self.body.append(ins)

    def put(self, *instrs: PtxInstr) -> None:
        """Append instructions built by ops.py's typed constructors, exempt from the
        peepholes (the tensor lowerings' sequences keep the shape their tests check)."""
        for ins in instrs:
            self.kept.add(id(ins))
            self.body.append(ins)

    def define(self, ins: Instr, reg: str) -> str:
        """`ins`'s value is (already) in `reg`. A value used before this point (see
        `forward`) is copied into the register its earlier uses read."""
        if id(ins) in self.forward:
            pre = self.vals[id(ins)]
            if ins.type.is_aggregate:
                lower_aggregate.copy(self, pre, reg, ins.type)
            elif pre != reg:
                self.op(I.MOV[_mov_suffix(ins.type)], pre, reg)
            return pre
        self.vals[id(ins)] = reg
        return reg

    def result(self, ins: Instr) -> str:
        """A fresh register for `ins` (the one its earlier uses read, for a forward
        reference), recorded as its value; the caller writes it."""
        if id(ins) in self.forward:
            return self.vals[id(ins)]
        return self.define(ins, self.new_t(ins.type))

    def define_imm(self, ins: Instr, imm: str) -> None:
        """`ins` is the constant `imm`: used as an immediate where PTX takes one, moved
        into a fresh register where it needs a register."""
        if id(ins) in self.forward:
            self.op(I.MOV[_mov_suffix(ins.type)], self.vals[id(ins)], imm)
            return
        self.imms[id(ins)] = imm

    def val(self, v: object) -> str:
        """Operand text: an immediate for numeric constants, else a register."""
        if isinstance(v, Const) and not isinstance(v.type, BoolType):
            return regs.imm(v.type, v.value)
        if isinstance(v, Undef) and not isinstance(v.type, BoolType):
            return regs.imm(v.type, 0)
        if self.imms and id(v) in self.imms:
            return self.imms[id(v)]
        return self.reg(v)

    def reg(self, v: object) -> str:
        """Operand text that is always a register (constants and addresses materialized)."""
        r = self.vals.get(id(v))
        if r is not None and isinstance(v, (Instr, Param)):
            return r
        if id(v) in self.imms:
            r = self.new_t(v.type)
            self.op(I.MOV[regs.bits(v.type)], r, self.imms[id(v)])
            return r
        if isinstance(v, Undef) and v.type.is_aggregate:
            return self.new_t(v.type)
        if isinstance(v, (Const, Undef)):
            r = self.new_t(v.type)
            value = v.value if isinstance(v, Const) else 0
            self.op(I.MOV["pred" if r.startswith("%p") else regs.bits(v.type)], r,
                    regs.imm(v.type, value))
            return r
        if isinstance(v, Global):
            return self.module.global_address(self, v)
        if isinstance(v, Function):
            raise error("E0505", f"the address of function `{v.name}` cannot be taken in "
                        "device code (PTX has no indirect calls here)", getattr(v, "span", None))
        if isinstance(v, Instr) and v.block is not None and v.block.function is self.fn:
            # Used in a block emitted before the one defining it (possible after -O moves
            # code; SSA dominance still guarantees the definition runs first): give it its
            # register now, and the definition writes that register (define/result).
            r = self.vals[id(v)] = self.new_t(v.type)
            self.forward.add(id(v))
            return r
        raise error("E0900", f"PTX backend: value {v!r} used before its definition")

    def local_reg(self, loc: Local) -> str:
        r = self.local_regs.get(id(loc))
        if r is None:
            r = self.local_regs[id(loc)] = self.new_t(loc.type)
        return r

    # ---- driver ----------------------------------------------------------------------
    def load_params(self, names: list[str]) -> None:
        entry = self.fn.is_kernel
        for p, name in zip(self.fn.params, names):
            if p.type.is_aggregate:
                self.vals[id(p)] = lower_aggregate.load_from(self, p.type, ".param",
                                                             Addr(name))
                continue
            r = self.new_t(p.type)
            if isinstance(p.type, BoolType):
                tmp = self.new("rs" if entry else "r")
                self.op(I.LD[".param", "", 1, "u8" if entry else "b32"], tmp, Addr(name))
                self.op(I.SETP["ne", "u16" if entry else "u32"], r, tmp, "0")
            else:
                self.op(I.LD[".param", "", 1, regs.param_format(p.type, entry)], r,
                        Addr(name))
            self.vals[id(p)] = r

    def lower_body(self) -> None:
        blocks = self.fn.blocks
        table, absorbed, patterns = self.table, self.absorbed, self.patterns
        for i, b in enumerate(blocks):
            self.next_block = blocks[i + 1] if i + 1 < len(blocks) else None
            self.label(self.labels[id(b)], b.name)
            self.block_cache = {}
            for ins in b.instrs:
                try:
                    handler = patterns.get(ins) or table[ins.op]
                except KeyError:
                    raise error("E0505", f"operation {ins.op} cannot be emitted as PTX",
                                ins.span) from None
                if ins not in absorbed:
                    try:
                        handler(self, ins)
                    except CompileError as e:      # unlocated: at least the function
                        raise _located(e, self.fn.span) from None

    def reg_decls(self) -> list[str]:
        out = []
        for c in regs.CLASS_ORDER:
            if self.counts[c]:
                prefix, decl = regs.CLASSES[c]
                out.append(f"\t.reg {decl} \t{prefix}<{self.counts[c] + 1}>;")
        return out


def _mov_suffix(t: Type) -> str:
    return "pred" if isinstance(t, BoolType) else regs.bits(t)


def _located(e: CompileError, span) -> CompileError:
    """`e` with each diagnostic that has no span given `span` (the enclosing function's)."""
    if span is None or all(d.span is not None for d in e.diagnostics):
        return e
    return CompileError([d if d.span is not None else
                         Diagnostic(d.code, d.message, span, d.severity, d.help, d.notes)
                         for d in e.diagnostics])
