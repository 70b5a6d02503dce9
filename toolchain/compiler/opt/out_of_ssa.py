"""out-of-SSA: the pipeline's last step turns every phi back into a `Local` slot, so the
ptx, spirv and x86_64 backends see the same local.get/local.set IR the frontend makes.

Each phi gets its own fresh slot: `local.set $slot, v` goes before the terminator of each
predecessor and a `local.get $slot` replaces the phi at the head of its block. A dedicated
slot per phi makes critical-edge splitting unnecessary: the slot is read only at its
block's head, and every edge into that block writes it last, so a write that also runs on
the predecessor's other edge is never observed. Gets read every slot before anything in
the block writes one, which is what makes swap-shaped phis (a <- b, b <- a) correct.
A predecessor listed twice (cbr c, X, X) carries one value (mem2reg never makes two).
"""
from __future__ import annotations

from ..ir.module import Local
from ..ir.types import VOID
from .edit import make_instr


def run(fn, analyses) -> bool:
    changed = False
    used = {l.name for l in fn.locals}
    n = 0
    for b in fn.blocks:
        if not b.instrs or b.instrs[0].op != "phi":
            continue                    # (most blocks: no `phis` list built)
        phis = b.phis
        changed = True
        for phi in phis:
            name = f"phi.{n}"
            while name in used:
                n += 1
                name = f"phi.{n}"
            used.add(name)
            n += 1
            slot = Local(phi.type, name)
            fn.locals.append(slot)
            done = set()
            for v, p in phi.incoming:
                if p in done:
                    continue
                done.add(p)
                p.insert(len(p.instrs) - 1,
                         make_instr("local.set", VOID, [slot, v], {}, [], phi.span, p))
            # the phi becomes a get of its slot, in place (same object: users keep it)
            phi.op, phi.operands, phi.targets, phi.attrs = "local.get", [slot], [], {}
    return changed
