"""What the slot-per-value host selectors (x86-64 here, AArch64 in targets/arm64) share:
operation dispatch, block layout and unconditional branches.

A selector mixes this in and sets JUMP (its unconditional branch mnemonic); `ice` raises the
target's internal-error diagnostic. Blocks are laid out in IR order, each at its own local
label; a branch to the block laid out next falls through.
"""
from __future__ import annotations

from .operands import Sym

BINARY = ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max")
CASTS = ("bitcast", "ptrtoint", "inttoptr", "addrspacecast")


class BlockMixin:
    JUMP = "jmp"

    def init_handlers(self) -> None:
        self.handlers = {op: self.op_binary for op in BINARY}
        self.handlers.update({op: self.op_bitcast for op in CASTS})

    def emit_blocks(self, fn) -> None:
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
        return Sym(label)

    def op_br(self, ins) -> None:
        self._jump(ins.targets[0])
