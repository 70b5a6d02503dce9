"""An early exit before the prologue (a light shrink-wrap) under -O.

A function whose entry block is one integer compare feeding its conditional branch, with a
successor that only computes integers from the parameters and returns (`if (m == 0) {
return n + 1; }`, a recursion's base case), gets that path selected first, straight on the
incoming argument registers: compare, branch to the normal prologue when not taken, else
compute and `ret` without a frame. Recursive functions spend most calls in their base case.

The path is the same IR selected again with another home for each value: parameters in
their argument registers (normalised in place, as the prologue would do anyway), results in
r10/r11 (the handlers used are integer ones, whose scratch registers are rax/rcx/rdx).
Parameters that arrive in a scratch register (rcx/rdx) rule the path out.

A function whose tail recursion became a loop (opt/tail_recursion.py) enters through a
block that only copies parameters and constants into the loop's slots and branches to the
loop header; when that header is slot reads, then the compare and branch, the path is
planned on the header, each read standing for the value its slot was just given (copies
of the instructions with those operands; the slow path still runs the real entry).
"""
from __future__ import annotations

from ...ir.module import Const, Instr, Param
from .abi_sysv import INTEGER
from .isel_values import normalize
from .operands import Sym
from .regs import R10, R11, RAX, RCX, RDX

_PURE = ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max", "cmp")
_INVERSE = {"e": "ne", "ne": "e", "l": "ge", "ge": "l", "le": "g", "g": "le", "b": "ae",
            "ae": "b", "be": "a", "a": "be"}


class FastPathMixin:
    def fast_exit(self, fn, lay) -> None:
        """Emit the early exit when `fn` has one (see the module docstring)."""
        plan = self._fast_plan(fn, lay)
        if plan is None:
            return
        cmp, cbr, taken_first, body, homes = plan
        saved_regs, self.regs = self.regs, homes
        for p in fn.params:
            if id(p) in homes:
                normalize(self.asm, p.type, homes[id(p)])
        slow = self.asm.new_label("Lslow")
        self.next_ins, self.flags, self.use_count = cbr, None, {id(cmp): 1}
        self.instr(cmp)
        cc = self.take_flags(cmp)
        taken = cc if taken_first else _INVERSE[cc]
        self.asm.emit("j" + _INVERSE[taken], Sym(slow))
        for k, ins in enumerate(body[:-1]):
            self.next_ins = body[k + 1]
            self.instr(ins)
        ret = body[-1]
        if ret.operands:
            self.load_bits(ret.operands[0], RAX)
        self.asm.emit("ret")
        self.asm.label(slow)
        self.regs, self._just_stored, self.flags = saved_regs, None, None

    def _fast_plan(self, fn, lay):
        if not self.allocate or not fn.blocks or lay.ret.kind == "memory":
            return None
        head, given = _through_copies(fn)
        entry = head.instrs[len(given):]
        if len(entry) != 2 or entry[0].op != "cmp" or entry[1].op != "cbr" or \
                entry[1].operands[0] is not entry[0] or entry[0].operands[0].type.is_float:
            return None
        homes: dict[int, object] = {}
        for p, loc in zip(fn.params, lay.args):
            if len(loc.regs) == 1 and loc.regs[0][0] == INTEGER and not loc.byref and \
                    not p.type.is_aggregate and not p.type.is_float and \
                    loc.regs[0][1] not in (RAX, RCX, RDX, R10, R11):
                homes[id(p)] = loc.regs[0][1]
        for block in entry[1].targets:
            if block is fn.blocks[0] or block is head:
                continue
            cmp, body = (_substituted([entry[0]], given)[0],
                         _substituted(block.instrs, given)) if given \
                else (entry[0], block.instrs)
            cbr = Instr("cbr", entry[1].type, [cmp], {}, list(entry[1].targets)) \
                if given else entry[1]
            plan = self._fast_block(body, homes)
            if plan is not None and all(self._known(o, plan) for o in cmp.operands):
                return cmp, cbr, entry[1].targets[0] is block, body, plan
        return None

    def _fast_block(self, instrs, homes):
        """Homes for a block's values when it is pure integer code ending in `ret`."""
        *body, ret = instrs or [None]
        if ret is None or ret.op != "ret" or len(body) > 2 or \
                (ret.operands and ret.operands[0].type.is_float) or \
                (ret.operands and ret.operands[0].type.is_aggregate):
            return None
        plan, spare = dict(homes), [R10, R11]
        for ins in body:
            if ins.op not in _PURE or ins.type.is_float or \
                    any(o.type.is_float for o in ins.operands) or \
                    not all(self._known(o, plan) for o in ins.operands):
                return None
            plan[id(ins)] = spare.pop(0)
        if ret.operands and not self._known(ret.operands[0], plan):
            return None
        return plan

    @staticmethod
    def _known(v, plan) -> bool:
        return isinstance(v, Const) or id(v) in plan


def _through_copies(fn):
    """(the block the path tests, {its leading slot reads: the value each stands for}).
    The entry block itself with {}, unless it only sets slots to parameters or constants
    and branches to a block that starts by reading exactly those slots."""
    entry = fn.blocks[0]
    *sets, br = entry.instrs or [None]
    if br is None or br.op != "br" or br.targets[0] is entry or \
            any(s.op != "local.set" or not isinstance(s.operands[1], (Param, Const))
                for s in sets):
        return entry, {}
    value = {s.operands[0]: s.operands[1] for s in sets}
    head, given = br.targets[0], {}
    for ins in head.instrs:
        if ins.op != "local.get" or ins.operands[0] not in value:
            break
        given[ins] = value[ins.operands[0]]
    return (head, given) if given else (entry, {})


def _substituted(instrs, given):
    """Detached copies of `instrs` reading `given`'s values (and each other's copies)."""
    out, new = [], dict(given)
    for ins in instrs:
        c = ins.clone()
        c.operands = [new.get(o, o) if isinstance(o, Instr) else o for o in c.operands]
        new[ins] = c
        out.append(c)
    return out
