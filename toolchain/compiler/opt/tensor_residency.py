"""Tensor accumulator residency: runtime-K loops and straight-line chains of connected
`tensor.mma` updates keep D's tile in registers (gpu.md "With -O": tensor chains and loops).

Loop form. A natural loop qualifies when its body holds exactly one subgroup-scope
`tensor.mma` whose C and D are the same loop-invariant pointer with the same (invariant)
leading dimension, whose accumulator and result formats and C/D layouts agree, when the
loop has a single exit edge, and when nothing else in the body touches memory or
synchronises (pure arithmetic, phis and branches only: no load, store, call, atomic,
barrier or other tensor operation). Then `tensor.acc_begin` (reads C) goes at the end of
the preheader, the MMA is marked `residency = (group, "update")`, and `tensor.acc_commit`
(writes D) opens a block split onto the exit edge. Because nothing in the loop reads or
writes memory besides the MMA, the resident tuple always equals what D would hold in
memory, so conditional updates and zero-trip loops stay exact. The `for` and `while`
spellings are the same loop here.

Chain form. Two or more `tensor.mma` in one block with identical descriptors where each
update's C is the previous update's D (same pointer, same stride) and only pure scalar
instructions sit between them: begin before the first, commit after the last.

Pipeline form. The same, where a pair of links is separated by one async completion
(`async.wait`) followed by one acq-rel/seq-cst workgroup barrier (the publication of the
next staged tile) with only pure work around them: an explicit N-stage copy/MMA schedule.
The resident tuple is carried through every wait and barrier; nothing reads D in between.

The backend decides resident or replay per group (targets/ptx/tensor/resident.py); replay
runs the original operations, so the transform is exact either way. Every decision, and
every refusal of an MMA inside a loop, is a remark for `--explain`.
"""
from __future__ import annotations

from ..ir.cfg import ensure_preheader, split_edge
from ..ir.module import Const, Instr
from ..ir.ops import OPS
from ..ir.types import VOID
from .edit import make_instr, publication_barrier
from .op_facts import PURE

NAME = "tensor-residency"


def _pure(ins: Instr) -> bool:
    info = OPS.get(ins.op)
    return ins.op == "phi" or (info is not None and not info.effects and not info.reads
                               and not info.terminator and info.collective is None) \
        or ins.op in ("br", "cbr")


def _roles(ins: Instr) -> dict:
    return dict(zip(ins.attrs["roles"], ins.operands))


def _same(a, b, depth: int = 3) -> bool:
    """The same value: one object, equal constants, or the same pure operation of the same
    values (two `(uint32)n` conversions in different blocks name one stride)."""
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return a.type == b.type and a.value == b.value
    if depth and isinstance(a, Instr) and isinstance(b, Instr) and a.op == b.op and \
            a.op in PURE and a.type == b.type and a.attrs == b.attrs and \
            len(a.operands) == len(b.operands):
        return all(_same(x, y, depth - 1) for x, y in zip(a.operands, b.operands))
    return False


def _eligible_desc(ins: Instr) -> str | None:
    """Why this MMA's descriptor cannot be resident (None: it can)."""
    desc = ins.attrs["desc"]
    if desc.scope != "subgroup":
        return "workgroup-scope MMA"
    if desc.accumulator_type != desc.result_type:
        return "accumulator and result formats differ"
    if desc.stored_layout("c") != desc.stored_layout("d"):
        return "C and D layouts differ"
    if desc.ldc != desc.ldd:
        return "C and D leading dimensions differ"
    r = _roles(ins)
    if ("ldc" in r) != ("ldd" in r) or ("ldc" in r and not _same(r["ldc"], r["ldd"])):
        return "C and D runtime leading dimensions differ"
    return None


def _begin(mma: Instr, group: int, kind: str) -> Instr:
    r = _roles(mma)
    roles = ("c",) + (("ldc",) if "ldc" in r else ())
    return make_instr("tensor.acc_begin", VOID, [r[k] for k in roles],
                 {"desc": mma.attrs["desc"], "roles": roles, "group": group, "kind": kind},
                 [], mma.span)


def _commit(mma: Instr, group: int, kind: str) -> Instr:
    r = _roles(mma)
    roles = ("d",) + (("ldd",) if "ldd" in r else ())
    return make_instr("tensor.acc_commit", VOID, [r[k] for k in roles],
                 {"desc": mma.attrs["desc"], "roles": roles, "group": group, "kind": kind},
                 [], mma.span)


class _Groups:
    def __init__(self, fn):
        self.next = sum(1 for ins in fn.instructions() if ins.op == "tensor.acc_begin")

    def new(self) -> int:
        self.next += 1
        return self.next - 1


def _loop_refusal(lp, mma: Instr) -> str | None:
    why = _eligible_desc(mma)
    if why:
        return why
    r = _roles(mma)
    if not _same(r["c"], r["d"]):
        return "C and D are different pointers (the loop would not carry D)"
    for k in ("c", "ldc"):
        if k in r and not lp.is_invariant(r[k]):
            return f"{k.upper()} changes inside the loop"
    for b in lp.blocks:
        for ins in b.instrs:
            if ins is mma or _pure(ins):
                continue
            return f"the loop body also executes {ins.op}"
    pairs = [(e, x) for e in lp.exiting for x in e.successors if not lp.contains(x)]
    if len(pairs) != 1:
        return f"the loop has {len(pairs)} exit edges (one is required)"
    return None


def _loops(fn, analyses, groups: _Groups, remarks, refused: set) -> bool:
    """Form one loop group (innermost first); True when the CFG changed (rescan)."""
    for lp in analyses.get("loops").innermost_first():
        if lp.header in refused:
            continue
        mmas = [i for b in lp.blocks for i in b.instrs if i.op == "tensor.mma"
                and not i.attrs.get("residency")]
        if not mmas:
            continue
        why = f"{len(mmas)} tensor MMAs in one loop body" if len(mmas) > 1 else \
            _loop_refusal(lp, mmas[0])
        if why:
            refused.add(lp.header)
            for m in mmas:
                remarks(m, f"tensor_loop not formed: {why}")
            continue
        mma = mmas[0]
        (exiting, exit_), = [(e, x) for e in lp.exiting for x in e.successors
                             if not lp.contains(x)]
        pre, _ = ensure_preheader(lp)
        g = groups.new()
        pre.insert_before(pre.terminator, _begin(mma, g, "loop"))
        mma.attrs["residency"] = (g, "update")
        tail = split_edge(fn, exiting, exit_)
        tail.insert(0, _commit(mma, g, "loop"))
        remarks(mma, f"tensor_loop group {g} formed: C read once before the loop "
                     f"(block {pre.name}), D written once on its exit")
        analyses.invalidate("all")
        return True
    return False


def _chains(fn, groups: _Groups, remarks) -> bool:
    """Straight-line groups in one block: links separated by pure scalar work (a chain) or
    by exactly one async completion followed by one publication barrier (a pipeline)."""
    changed = False
    for b in fn.blocks:
        chain: list[Instr] = []
        seps: list[Instr] = []              # non-pure instructions since the last link
        staged = False                      # some pair was separated by wait + barrier

        def flush() -> None:
            nonlocal changed, staged
            if len(chain) >= 2:
                kind = "pipeline" if staged else "chain"
                g = groups.new()
                b.insert_before(chain[0], _begin(chain[0], g, kind))
                for m in chain:
                    m.attrs["residency"] = (g, "update")
                b.insert(b.instrs.index(chain[-1]) + 1, _commit(chain[-1], g, kind))
                how = " across wait/barrier handoffs" if staged else ""
                remarks(chain[0], f"tensor_{kind} group {g} formed: {len(chain)} connected "
                                  f"MMAs{how}, C read once, D written once")
                changed = True
            chain.clear()
            seps.clear()
            staged = False

        for ins in list(b.instrs):
            if ins.op == "tensor.mma" and not ins.attrs.get("residency") \
                    and not _eligible_desc(ins):
                handoff = [s.op for s in seps] == ["async.wait", "gpu.barrier"]
                if chain and not (_links(chain[-1], ins) and (not seps or handoff)):
                    flush()
                staged = staged or (bool(chain) and handoff)
                chain.append(ins)
                seps.clear()
            elif _pure(ins) and ins.op not in ("br", "cbr"):
                continue                        # scalar work between links is allowed
            elif chain and ((ins.op == "async.wait" and not seps) or
                            (publication_barrier(ins) and [s.op for s in seps] == ["async.wait"])):
                seps.append(ins)
            else:
                flush()                         # an observable instruction ends the group
        flush()
    return changed


def _links(prev: Instr, ins: Instr) -> bool:
    """Whether `ins` continues a chain ending in `prev`: same descriptor, C is prev's D."""
    if ins.attrs["desc"] != prev.attrs["desc"]:
        return False
    p, r = _roles(prev), _roles(ins)
    return _same(r["c"], p["d"]) and _same(r["d"], p["d"]) and \
        _same(r.get("ldc"), p.get("ldd")) and _same(r.get("ldd"), p.get("ldd"))


def _epilogue_compatible(ep: Instr, commit: Instr) -> str | None:
    """Why `ep` cannot act on the group's accumulator (None: it can), gpu.md's rules: same D,
    M/N, result format, layout, stride and scope. A bias is the backend's call: it needs
    the accumulator's coordinates, which some register families do not expose (PTX's stable
    WMMA then stores D first and runs the complete operation)."""
    d, m = ep.attrs["desc"], commit.attrs["desc"]
    er, cr = _roles(ep), _roles(commit)
    if not _same(er["d"], cr["d"]):
        return "a different D"
    if (d.m, d.n) != (m.m, m.n) or d.element_type != m.result_type:
        return "a different shape or format"
    if d.layout != m.stored_layout("d") or d.scope != m.scope:
        return "a different layout or scope"
    if d.ld != m.ldd or not _same(er.get("ldd"), cr.get("ldd")):
        return "a different stride"
    if m.result_type != "f32":
        return "a non-f32 result"
    return None


def _fuse_epilogues(fn, remarks) -> None:
    """Move a compatible tensor_epilogue that follows a group's commit to just before it and
    mark it `fused`: resident, the backend applies it to the registers before the one store;
    replayed, D is already in memory there, so the complete operation is just as exact."""
    preds: dict = {}
    for b in fn.blocks:
        for s_ in b.successors:
            preds.setdefault(s_, []).append(b)
    for b in fn.blocks:
        for commit in [i for i in b.instrs if i.op == "tensor.acc_commit"]:
            ep, where = _next_epilogue(b, commit, preds)
            if ep is None:
                if where:
                    remarks(commit, f"tensor epilogue not fused: {where}")
                continue
            why = _epilogue_compatible(ep, commit)
            deps = _pure_deps(ep, commit) if why is None else []
            if why is None and deps is None:
                why = "its operands depend on work after the commit"
            if why:
                remarks(ep, f"tensor epilogue not fused: {why}; the complete memory "
                            "operation runs after the commit")
                continue
            for ins in deps + [ep]:              # operands (pure, in order), then the op
                ins.block.instrs.remove(ins)
                ins.block = b
                b.instrs.insert(b.instrs.index(commit), ins)
            ep.attrs["fused"] = commit.attrs["group"]
            remarks(ep, f"tensor epilogue fused onto group {commit.attrs['group']}")


def _pure_deps(ep: Instr, commit: Instr) -> list[Instr] | None:
    """The pure instructions after `commit` that `ep`'s operands are computed by, in program
    order, when all of them can move before the commit (else None)."""
    need: list[Instr] = []
    stack = [o for o in ep.operands if _after(o, commit)]
    while stack:
        v = stack.pop()
        if v in need:
            continue
        if v.op not in PURE:
            return None
        need.append(v)
        stack.extend(o for o in v.operands if _after(o, commit))
    order = {ins: k for k, ins in enumerate(i for b in commit.block.function.blocks
                                            for i in b.instrs)}
    return sorted(need, key=order.__getitem__)


def _after(v, commit: Instr) -> bool:
    """Whether value `v` is defined after `commit` (in its block, or in a later block)."""
    if not isinstance(v, Instr) or v.block is None:
        return False
    if v.block is commit.block:
        return v.block.instrs.index(v) > v.block.instrs.index(commit)
    return v.block is not commit.block and commit.block.successors == [v.block]


def _next_epilogue(b, commit: Instr, preds) -> tuple[Instr | None, str]:
    """The tensor.epilogue that next follows `commit` with only pure work between, in its
    block or across an unconditional jump that is the target's only incoming edge."""
    block, start = b, b.instrs.index(commit) + 1
    for _ in range(2):
        for ins in block.instrs[start:]:
            if ins.op == "tensor.epilogue":
                return ins, ""
            if ins.op == "br" and block is b:
                nxt = ins.targets[0]
                if preds.get(nxt, []) != [block]:
                    return None, ("the epilogue's block is also reached around the commit"
                                  if any(i.op == "tensor.epilogue" for i in nxt.instrs) else "")
                block, start = nxt, 0
                break
            if ins.op == "br":              # a second jump is not followed: say why
                nxt = ins.targets[0]
                if any(i.op == "tensor.epilogue" for i in nxt.instrs):
                    return None, ("the epilogue's block is also reached around the commit"
                                  if preds.get(nxt, []) != [block] else
                                  "the epilogue is more than one jump after the commit")
            if not _pure(ins):
                return None, ""
        else:
            return None, ""
    return None, ""


def run(fn, analyses) -> bool:
    if not analyses.gpu or "tensor.mma" not in analyses.get("ops"):
        return False
    groups = _Groups(fn)

    def remarks(ins, text):
        analyses.remark(ins.span, NAME, text)

    changed, refused = False, set()
    while _loops(fn, analyses, groups, remarks, refused):
        changed = True
    changed = _chains(fn, groups, remarks) or changed
    if changed:
        _fuse_epilogues(fn, remarks)
    return changed
