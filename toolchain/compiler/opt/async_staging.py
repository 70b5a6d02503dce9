"""async-staging: ordinary global->workgroup staging becomes one neutral async-copy group
(gpu.md "With -O": automatic async staging).

In one block, each pair `v = load src; store dst, v` qualifies when every legality condition
is proved:
- provenance: `src` points to global memory and `dst` to workgroup memory (pointer spaces);
- width and alignment: the element is 4 or 8 bytes (a native transaction size) and the
  `pointers` analysis proves both addresses aligned to it;
- single use: the store is the load's only use;
- straight-line control: the pairs and the barrier are in one basic block;
- publication: a later acq-rel/seq-cst workgroup barrier in that block;
- no intervening effects: between the first pair and the barrier nothing else writes memory,
  reads workgroup memory, synchronises or calls.
The pairs become `async.copy dst, src, 1` at the store's place, one `async.commit` follows
the last copy (before the independent scalar work), and `async.wait 0` goes immediately
before the barrier. A function that already uses async groups is left alone, so generated
staging never splices into user-managed pending groups. The backend then picks cp.async or
a synchronous replay; the neutral region is the same for every target.
"""
from __future__ import annotations

from ..ir.module import Const, Instr
from ..ir.ops import OPS
from ..ir.types import I32, VOID
from .edit import make_instr, publication_barrier

NAME = "async-staging"
_ASYNC = ("async.copy", "async.commit", "async.wait")


def _space(v) -> str | None:
    t = getattr(v, "type", None)
    return t.space if t is not None and t.is_ptr else None


def _stage_block(b, uses, facts, remarks) -> bool:
    pairs: list[tuple[Instr, Instr]] = []
    pending_loads: dict = {}
    for ins in b.instrs:
        if ins.op == "load" and _space(ins.operands[0]) == "global":
            pending_loads[ins] = True
            continue
        if ins.op == "store":
            dst, v = ins.operands
            if v in pending_loads and _space(dst) == "workgroup" and len(uses.uses(v)) == 1:
                size = v.type.size
                aligned = min(facts.align(dst), facts.align(v.operands[0])) >= size
                if size in (4, 8) and aligned:
                    pairs.append((v, ins))
                    del pending_loads[v]
                    continue
                remarks(ins.span, f"staging not formed: a {size}-byte element (native "
                                  "async copies move 4, 8 or 16 bytes)" if size not in (4, 8)
                        else f"staging not formed: a {size}-byte element not known to be "
                        f"{size}-byte aligned")
            if pairs:
                remarks(ins.span, "staging not formed: another store before the barrier")
                return False
            continue
        if publication_barrier(ins):
            if not pairs:
                return False
            _rewrite(b, pairs, ins)
            remarks(pairs[0][1].span or ins.span,
                    f"{len(pairs)} global->workgroup load/store pair(s) staged as one "
                    "async-copy group (commit after the last copy, wait before the barrier)")
            return True
        if pairs and ins.op == "gpu.barrier":
            remarks(ins.span, "staging not formed: the barrier is not an acq_rel/seq_cst "
                              "workgroup barrier, so it does not publish the copies")
            return False
        info = OPS.get(ins.op)
        if pairs and info is not None and (info.effects or info.collective) or \
                pairs and ins.op == "load" and _space(ins.operands[0]) != "global":
            remarks(ins.span, f"staging not formed: {ins.op} between the staged copies and "
                              "their publication barrier")
            return False
    return False


def _rewrite(b, pairs, barrier: Instr) -> None:
    last = None
    for load, store in pairs:
        copy = make_instr("async.copy", VOID, [store.operands[0], load.operands[0], Const(I32, 1)],
                     {"transaction": load.type.size, "cache": "all"}, [], store.span, b)
        b.instrs[b.instrs.index(store)] = copy   # where both addresses are defined
        b.instrs.remove(load)
        last = copy
    b.instrs.insert(b.instrs.index(last) + 1,
                    make_instr("async.commit", VOID, [], {}, [], last.span, b))
    b.instrs.insert(b.instrs.index(barrier),
                    make_instr("async.wait", VOID, [], {"pending": 0}, [], barrier.span, b))


def run(fn, analyses) -> bool:
    if not analyses.gpu:
        return False
    ops = analyses.get("ops")               # (the census: tensor-residency reads it next)
    if "gpu.barrier" not in ops or "store" not in ops or ops & set(_ASYNC):
        return False                         # nothing to stage (and a cheap exit)
    def remarks(span, text):
        analyses.remark(span, NAME, text)

    uses, facts = analyses.get("uses"), analyses.get("pointers")
    changed = False
    for b in fn.blocks:
        changed |= _stage_block(b, uses, facts, remarks)
    return changed
