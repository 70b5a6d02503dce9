"""What the slot-per-value host selectors (targets/x86_64, targets/arm64) share:
operation dispatch, block layout and unconditional branches.

A selector mixes this in and sets JUMP (its unconditional branch mnemonic); `ice` raises the
target's internal-error diagnostic. A compare feeding only the next conditional branch
branches on the flags instead of materialising a bool (`fuses_with_branch`/`take_flags`). Blocks are laid out in IR order, each at its own local
label; a branch to the block laid out next falls through.
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
        for i, block in enumerate(fn.blocks):
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
        if block is not self.next_block:
            self.asm.emit(self.JUMP, self.branch_target(self.labels[id(block)]))

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
