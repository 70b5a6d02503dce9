"""Control flow, calls and locals: br, cbr, ret, unreachable, call, local.get/set, select.

Branches to the block emitted next fall through (no `bra`). A `.func` returns its value
through `func_retval0`; calls use the PTX ABI's scoped `{ .param ...; call.uni ... }`
sequence, with bool widened to .b32 as in the `.func` signatures (regs.param_type) and
aggregates in byte-array slots (lower_aggregate.py).
"""
from __future__ import annotations

from ...ir.module import Instr
from ...ir.types import BoolType, VOID
from . import lower_aggregate, ops, regs
from .instr import Addr, directive, scope


def lower_br(em, ins: Instr) -> None:
    target = ins.targets[0]
    if target is not em.next_block:
        em.effect("bra.uni", em.labels[id(target)])


def lower_cbr(em, ins: Instr) -> None:
    p = em.reg(ins.operands[0])
    then, else_ = ins.targets
    if then is em.next_block:
        em.effect("bra", em.labels[id(else_)], guard=p, negated=True)
        return
    em.effect("bra", em.labels[id(then)], guard=p)
    if else_ is not em.next_block:
        em.effect("bra.uni", em.labels[id(else_)])


def store_param(em, name: str, t, value) -> None:
    """st.param of one value into a `.func`-ABI param slot."""
    if t.is_aggregate:
        lower_aggregate.store_to(em, t, ".param", Addr(name), value)
    elif isinstance(t, BoolType):
        tmp = em.new("r")
        em.op("selp.u32", tmp, "1", "0", em.reg(value))
        em.effect("st.param.b32", Addr(name), tmp)
    else:
        em.append(ops.st(".param", regs.param_format(t, False), Addr(name), em.reg(value)))


def load_param(em, ins: Instr, name: str, t) -> None:
    """ld.param of `ins`'s value from a `.func`-ABI param slot."""
    if t.is_aggregate:
        em.define(ins, lower_aggregate.load_from(em, t, ".param", Addr(name)))
        return
    dest = em.result(ins)
    if isinstance(t, BoolType):
        tmp = em.new("r")
        em.op("ld.param.b32", tmp, Addr(name))
        em.op("setp.ne.u32", dest, tmp, "0")
    else:
        em.append(ops.ld(".param", regs.param_format(t, False), dest, Addr(name)))


def lower_ret(em, ins: Instr) -> None:
    if ins.operands:
        store_param(em, "func_retval0", em.fn.ret, ins.operands[0])
    em.effect("ret")


def lower_unreachable(em, ins: Instr) -> None:
    em.effect("trap")


def lower_call(em, ins: Instr) -> None:
    callee, args = ins.operands[0], ins.operands[1:]
    name = em.module.function_name(callee)
    em.append(scope("{"))
    slots = []
    for i, (a, p) in enumerate(zip(args, callee.params)):
        slot = f"param{i}"
        em.append(directive(regs.param_decl(p.type, slot, False)))
        store_param(em, slot, p.type, a)
        slots.append(slot)
    arglist = (f"({', '.join(slots)})",) if slots else ()
    if callee.ret != VOID:
        em.append(directive(regs.param_decl(callee.ret, "retval0", False)))
        em.effect("call.uni", "(retval0)", name, *arglist)
        load_param(em, ins, "retval0", callee.ret)
    else:
        em.effect("call.uni", name, *arglist)
    em.append(scope("}"))


def lower_local_get(em, ins: Instr) -> None:
    if ins.type.is_aggregate:
        lower_aggregate.lower_local_get(em, ins)
        return
    src = em.local_reg(ins.operands[0])
    if ins in em.alias_gets:
        em.define(ins, src)
        return
    dst = em.result(ins)
    em.op(ops.MOV[_mov_type(ins.type)], dst, src)


def lower_local_set(em, ins: Instr) -> None:
    loc, value = ins.operands
    if loc.type.is_aggregate:
        lower_aggregate.lower_local_set(em, ins)
        return
    dst = em.local_reg(loc)
    em.op(ops.MOV[_mov_type(loc.type)], dst, em.val(value))


def _mov_type(t) -> str:
    return "pred" if isinstance(t, BoolType) else regs.bits(t)


def lower_select(em, ins: Instr) -> None:
    if ins.type.is_aggregate:
        lower_aggregate.lower_select(em, ins)
        return
    cond, a, b = ins.operands
    p = em.reg(cond)
    d = em.result(ins)
    if isinstance(ins.type, BoolType):
        # selp has no .pred form: two predicated moves.
        em.op("mov.pred", d, em.reg(a), guard=p)
        em.op("mov.pred", d, em.reg(b), guard=p, negated=True)
        return
    em.op(ops.SELP[regs.bits(ins.type)], d, em.val(a), em.val(b), p)


LOWER = {
    "br": lower_br, "cbr": lower_cbr, "ret": lower_ret, "unreachable": lower_unreachable,
    "call": lower_call, "local.get": lower_local_get, "local.set": lower_local_set,
    "select": lower_select,
}
