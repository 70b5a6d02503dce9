"""load-combine: adjacent scalar loads of one base become one vector load (GPU targets).

In one block, loads of one int/float element type T (4 or 8 bytes) whose addresses are the
same base and dynamic part (`analyses.get("pointers").parts`) at consecutive constant
offsets o, o+|T|, ... become one `load vec<N x T>` (N = 4 for 4-byte T, else 2: at most
16 bytes, a 128-bit transaction) when the pointer facts prove the first address aligned
to the vector's size; each scalar load turns into a `vec.extract`. Runs of 2 are formed
where 4 are not. The vector load takes the place of the group's earliest load, so:
- between the earliest and every later member nothing may write memory the pointer facts
  cannot prove disjoint from that member, and nothing else with effects or
  synchronisation (calls, atomics, barriers, async copies, tensor ops) may lie between;
- the address is the earliest member's pointer moved by a constant (`byteadd`), and
  reinterpreted as a vector pointer (`bitcast`): both fold into `[reg+imm]` on PTX.

Stores are combined the same way (at the latest member's place, built with
`vec.insert`), when nothing between the first and last member may read or write their
bytes. GPU only: PTX has ld/st.v2/.v4, SPIR-V vector OpLoad/OpStore; host code keeps
scalars. Remark: `load-combine: 4 loads combined into one 16-byte vector load`.
"""
from __future__ import annotations

from ..ir.module import Const, Instr, Undef, replace_all_uses_with
from ..ir.ops import OPS
from ..ir.types import I64, PtrType, VectorType

NAME = "load-combine"


def run(fn, analyses) -> bool:
    if not analyses.gpu:
        return False
    if not any(i.op in ("load", "store") for b in fn.blocks for i in b.instrs):
        return False
    facts = analyses.get("pointers")
    changed = False
    for b in fn.blocks:
        for kind in ("load", "store"):
            while _combine_one(b, kind, facts, analyses):
                changed = True
    return changed


def _elem_ok(t) -> bool:
    return (t.is_int or t.is_float) and t.size in (4, 8)


def _access(ins, kind):
    """(pointer, element type) of a combinable access of `kind`, else None."""
    if ins.op != kind:
        return None
    p = ins.operands[0]
    t = ins.type if kind == "load" else ins.operands[1].type
    return (p, t) if _elem_ok(t) and isinstance(p.type, PtrType) else None


def _combine_one(b, kind, facts, analyses) -> bool:
    groups: dict = {}
    for pos, ins in enumerate(b.instrs):
        acc = _access(ins, kind)
        if acc is None:
            continue
        p, t = acc
        base, terms, off = facts.parts(p)
        groups.setdefault((base, terms, t, p.type.space), {}).setdefault(off, (pos, ins))
    for (_, _, t, _), by_off in groups.items():
        if len(by_off) < 2:
            continue
        for n in ((4, 2) if t.size == 4 else (2,)):
            for o in sorted(by_off):
                run_ = [by_off.get(o + k * t.size) for k in range(n)]
                if None in run_:
                    continue
                members = [ins for _, ins in run_]
                if facts.align(members[0].operands[0]) < n * t.size:
                    continue
                if not _movable(b, members, kind, facts):
                    continue
                _rewrite(b, members, kind, t, n, facts)
                analyses.remark(members[0].span or b.function.span, NAME,
                                f"{n} {kind}s combined into one {n * t.size}-byte vector "
                                f"{kind}")
                return True
    return False


def _movable(b, members, kind, facts) -> bool:
    """Whether the group may run as one access at its earliest load (latest store)."""
    pos = {ins: i for i, ins in enumerate(b.instrs)}
    first = min(pos[m] for m in members)
    last = max(pos[m] for m in members)
    mine = set(members)
    for ins in b.instrs[first + 1:last]:
        if ins in mine:
            continue
        info = OPS.get(ins.op)
        if ins.op == "store":
            p, v = ins.operands
            # loads: a later member must not see this store; stores: an earlier
            # member must not pass it
            moved = [m for m in members if (pos[m] > pos[ins]) == (kind == "load")]
            if any(not facts.disjoint(p, v.type.size, m.operands[0], _size(m, kind))
                   for m in moved):
                return False
        elif ins.op == "load" and kind == "store":
            moved = [m for m in members if pos[m] < pos[ins]]
            if any(not facts.disjoint(ins.operands[0], ins.type.size, m.operands[0],
                                      _size(m, kind)) for m in moved):
                return False
        elif info is None or info.effects or info.collective or \
                (info.reads and ins.op != "load"):
            return False
    return True


def _size(m, kind) -> int:
    return (m.type if kind == "load" else m.operands[1].type).size


def _vector_pointer(b, at: int, members, facts, vt, anchor) -> tuple[Instr, int]:
    """Instructions computing the vector's address before index `at`, from `anchor`
    (a member defined before that point); returns (pointer, instructions added)."""
    p0 = members[0].operands[0]
    p = anchor.operands[0]
    added = 0
    delta = facts.parts(p0)[2] - facts.parts(p)[2]
    if delta:
        p = b.insert(at, Instr("byteadd", p.type, [p, Const(I64, delta)], {}, [],
                               members[0].span))
        added += 1
    vp = b.insert(at + added, Instr("bitcast", PtrType(vt, p.type.space), [p], {}, [],
                                    members[0].span))
    return vp, added + 1


def _rewrite(b, members, kind, t, n, facts) -> None:
    vt = VectorType(t, n)
    pos = {ins: i for i, ins in enumerate(b.instrs)}
    if kind == "load":
        earliest = min(members, key=pos.__getitem__)
        at = pos[earliest]
        vp, k = _vector_pointer(b, at, members, facts, vt, earliest)
        vec = b.insert(at + k, Instr("load", vt, [vp], {}, [], members[0].span))
        for i, m in enumerate(members):
            ext = b.insert(at + k + 1 + i, Instr("vec.extract", t, [vec], {"index": i}, [],
                                                 m.span))
            replace_all_uses_with(b.function, m, ext)
        for m in members:
            m.erase()
        return
    latest = max(members, key=pos.__getitem__)
    at = pos[latest]
    vp, k = _vector_pointer(b, at, members, facts, vt, latest)
    value = Undef(vt)
    for i, m in enumerate(members):
        value = b.insert(at + k + i, Instr("vec.insert", vt, [value, m.operands[1]],
                                           {"index": i}, [], m.span))
    b.insert(at + k + n, Instr("store", members[0].type, [vp, value], {}, [],
                               members[0].span))
    for m in members:
        m.erase()
