"""Control flow and calls: br, cbr, ret, unreachable, call.

Branches are free (OpBranch / OpBranchConditional with no OpSelectionMerge/OpLoopMerge):
the Kernel capability does not require structured control flow. Calls name helpers by id;
device_program has already rejected recursion, indirect and extern calls.
"""
from __future__ import annotations

from ...ir.types import VOID
from .emit_function import register


def lower_br(em, ins) -> None:
    em.op("OpBranch", em.label(ins.targets[0]))


def lower_cbr(em, ins) -> None:
    then, else_ = ins.targets
    em.op("OpBranchConditional", em.val(ins.operands[0]), em.label(then), em.label(else_))


def lower_ret(em, ins) -> None:
    if ins.operands:
        em.op("OpReturnValue", em.val(ins.operands[0]))
    else:
        em.op("OpReturn")


def lower_unreachable(em, ins) -> None:
    em.op("OpUnreachable")


def lower_call(em, ins) -> None:
    callee, args = ins.operands[0], ins.operands[1:]
    em.callees.append(callee)
    rt = em.types.value(ins.type, ins.span)
    rid = em.op("OpFunctionCall", rt, em.ctx.fn_ids[callee.name],
                *(em.val(a) for a in args))
    if ins.type != VOID:
        em.define(ins, rid)


register({"br": lower_br, "cbr": lower_cbr, "ret": lower_ret,
          "unreachable": lower_unreachable, "call": lower_call})
