"""What the slot-per-value host selectors (targets/x86_64, targets/arm64) share:
operation dispatch, block layout and unconditional branches.

A selector mixes this in and sets JUMP (its unconditional branch mnemonic); `ice` raises the
target's internal-error diagnostic. A compare feeding only the next conditional branch
branches on the flags instead of materialising a bool (`fuses_with_branch`/`take_flags`).
Blocks are laid out in IR order, each at its own local label; a branch to the block laid
out next falls through; under -O a back edge to a short loop header is a copy of the
header (loop rotation, `_rotatable`).
"""
from __future__ import annotations


BINARY = ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max")
CASTS = ("bitcast", "ptrtoint", "inttoptr", "addrspacecast")


class BlockMixin:
    JUMP = "jmp"

    def init_handlers(self) -> None:
        self.handlers = {op: self.op_binary for op in BINARY}
        self.handlers.update({op: self.op_bitcast for op in CASTS})

    def emit_blocks(self, fn) -> None:
        self.use_count: dict[int, int] = {}
        for ins in fn.instructions():
            for o in ins.operands:
                self.use_count[id(o)] = self.use_count.get(id(o), 0) + 1
        self.flags = None    # (compare, condition) whose flags the next cbr branches on
        self.rotate = getattr(self, "allocate", False)   # loop rotation under -O only
        self.layout_index = {id(b): i for i, b in enumerate(fn.blocks)}
        for i, block in enumerate(fn.blocks):
            self.current_index = i
            self.next_block = fn.blocks[i + 1] if i + 1 < len(fn.blocks) else None
            self.asm.label(self.labels[id(block)])
            for k, ins in enumerate(block.instrs):
                self.next_ins = block.instrs[k + 1] if k + 1 < len(block.instrs) else None
                self.instr(ins)

    def instr(self, ins) -> None:
        handler = self.handlers.get(ins.op) or \
            getattr(self, "op_" + ins.op.replace(".", "_"), None)
        if handler is None:
            raise self.ice(f"operation '{ins.op}' cannot be compiled for the host")
        handler(ins)

    def _jump(self, block) -> None:
        if block is self.next_block:
            return
        if self.rotate and self._rotatable(block):
            self._inline_header(block)
            return
        self.asm.emit(self.JUMP, self.branch_target(self.labels[id(block)]))

    # Loop rotation: a back edge `br H` to a short loop header H (a few pure instructions
    # ending in a cbr) is replaced by a copy of H, so each iteration ends in one conditional
    # branch instead of a jump and a branch. The copy runs exactly what H would run next,
    # in the same registers, so the register allocation holds as it is.
    ROTATE_LIMIT = 8

    def _rotatable(self, block) -> bool:
        instrs = block.instrs
        if not instrs or instrs[-1].op != "cbr" or len(instrs) > self.ROTATE_LIMIT:
            return False
        if self.layout_index.get(id(block), 1 << 30) > self.current_index:
            return False                       # forward branch: not a loop's back edge
        return all(i.op in ("local.get", "cmp", "cbr") or i.op in BINARY and
                   not i.type.is_aggregate and i.op not in ("div", "rem")
                   for i in instrs)

    def _inline_header(self, block) -> None:
        saved = self.next_ins, self.rotate
        self.rotate = False                   # the copy's own cbr jumps plainly
        for k, ins in enumerate(block.instrs):
            self.next_ins = block.instrs[k + 1] if k + 1 < len(block.instrs) else None
            self.instr(ins)
        self.next_ins, self.rotate = saved

    def branch_target(self, label: str):
        raise NotImplementedError   # the target's symbol operand for `label`

    def op_br(self, ins) -> None:
        self._jump(ins.targets[0])

    def fuses_with_branch(self, ins) -> bool:
        """A compare whose only use is the cbr right after it leaves its result in the flags
        (the selector's op_cmp then sets `self.flags` and op_cbr branches on them)."""
        nxt = self.next_ins
        return nxt is not None and nxt.op == "cbr" and nxt.operands[0] is ins and \
            self.use_count.get(id(ins), 0) == 1

    def take_flags(self, cond) -> str | None:
        """The condition of the fused compare `cond`, once; None when it was not fused."""
        flags, self.flags = self.flags, None
        return flags[1] if flags is not None and flags[0] is cond else None
