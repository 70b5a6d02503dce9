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

from ..ir.module import Const, Undef
from ..ir.ops import OPS
from ..ir.types import I64, PtrType, VectorType
from .edit import make_instr

NAME = "load-combine"


def run(fn, analyses) -> bool:
    if not analyses.gpu:
        return False
    facts = None
    replace: dict = {}                   # combined load -> its vec.extract
    changed = False
    for b in fn.blocks:
        loads: list = []
        stores: list = []
        for ins in b.instrs:
            op = ins.op
            if op == "load" or op == "store":
                pt = ins.operands[0].type          # (most accesses: global, no call)
                if pt.__class__ is not PtrType or pt.space not in _SPACES:
                    continue
                acc = _access(ins, op)
                if acc is not None:
                    (loads if op == "load" else stores).append((ins, acc))
        for kind, accesses in (("load", loads), ("store", stores)):
            if len(accesses) > 1:
                facts = facts or analyses.get("pointers")
                changed |= _combine_block(b, kind, accesses, facts, analyses, replace)
    if replace:
        for b in fn.blocks:
            for ins in b.instrs:
                ops = ins.operands
                for i, o in enumerate(ops):
                    r = replace.get(o)
                    if r is not None:
                        ops[i] = r
    return changed


def _elem_ok(t) -> bool:
    return (t.is_int or t.is_float) and t.size in (4, 8)


_SPACES = ("workgroup", "private")      # where storage can be shown 16-byte aligned


def _access(ins, kind):
    """(pointer, element type) of a combinable access of `kind`, else None. Only workgroup
    and private memory: a global or generic pointer is a parameter's or a global's, known
    only to be naturally aligned (compile time: no fact-finding for accesses that could
    never combine)."""
    if ins.op != kind:
        return None
    p = ins.operands[0]
    pt = p.type
    if not (isinstance(pt, PtrType) and pt.space in _SPACES):
        return None
    t = ins.type if kind == "load" else ins.operands[1].type
    return (p, t) if _elem_ok(t) else None


def _candidates(b, kind, accesses, facts, pos) -> list:
    """Runs of members to combine, each member in at most one run; store runs never
    overlap (each is checked against the block as it stands, its span untouched by the
    others)."""
    groups: dict = {}
    for ins, (p, t) in accesses:
        base, terms, off = facts.parts(p)
        groups.setdefault((base, terms, t, p.type.space), {}).setdefault(off, ins)
    out: list = []
    taken: set = set()
    spans: list = []
    for (_, _, t, _), by_off in groups.items():
        if len(by_off) < 2 or facts.run_align(next(iter(by_off.values())).operands[0]) < 8:
            continue                     # no run of this base can be shown aligned
        for n in ((4, 2) if t.size == 4 else (2,)):
            for o in sorted(by_off):
                members = [by_off.get(o + k * t.size) for k in range(n)]
                if None in members or taken.intersection(members):
                    continue
                if facts.align(members[0].operands[0]) < n * t.size:
                    continue
                span = (min(pos[m] for m in members), max(pos[m] for m in members))
                if kind == "store" and any(a <= span[1] and span[0] <= z for a, z in spans):
                    continue
                if not _movable(b, members, kind, facts, pos):
                    continue
                out.append((members, t, n))
                taken.update(members)
                spans.append(span)
    return out


def _combine_block(b, kind, accesses, facts, analyses, replace) -> bool:
    pos = {ins: i for i, ins in enumerate(b.instrs)}
    runs = _candidates(b, kind, accesses, facts, pos)
    if not runs:
        return False
    before: dict = {}                    # anchor -> instructions placed before it
    gone: set = set()
    for members, t, n in runs:
        anchor, new = _rewrite(members, kind, t, n, facts, pos, replace)
        before[anchor] = new
        gone.update(members)
        analyses.remark(members[0].span or b.function.span, NAME,
                        f"{n} {kind}s combined into one {n * t.size}-byte vector {kind}")
    out = []
    for ins in b.instrs:
        for new in before.get(ins, ()):
            new.block = b
            out.append(new)
        if ins in gone:
            ins.block = None
        else:
            out.append(ins)
    b.instrs = out
    return True


def _movable(b, members, kind, facts, pos) -> bool:
    """Whether the group may run as one access at its earliest load (latest store)."""
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


def _vector_pointer(members, facts, vt, anchor) -> list:
    """Instructions computing the vector's address from `anchor` (a member whose pointer
    is defined before the combined access): [optional byteadd, bitcast]."""
    p0 = members[0].operands[0]
    p = anchor.operands[0]
    out = []
    delta = facts.parts(p0)[2] - facts.parts(p)[2]
    if delta:
        p = make_instr("byteadd", p.type, [p, Const(I64, delta)], {}, [], members[0].span)
        out.append(p)
    out.append(make_instr("bitcast", PtrType(vt, p.type.space), [p], {}, [], members[0].span))
    return out


def _rewrite(members, kind, t, n, facts, pos, replace) -> tuple:
    """(anchor, the instructions replacing the group before it); loads record their
    extracts in `replace`."""
    vt = VectorType(t, n)
    span = members[0].span
    if kind == "load":
        anchor = min(members, key=pos.__getitem__)
        new = _vector_pointer(members, facts, vt, anchor)
        vec = make_instr("load", vt, [new[-1]], {}, [], span)
        new.append(vec)
        for i, m in enumerate(members):
            ext = make_instr("vec.extract", t, [vec], {"index": i}, [], m.span)
            new.append(ext)
            replace[m] = ext
        return anchor, new
    anchor = max(members, key=pos.__getitem__)
    new = _vector_pointer(members, facts, vt, anchor)
    vp = new[-1]
    value = Undef(vt)
    for i, m in enumerate(members):
        value = make_instr("vec.insert", vt, [value, m.operands[1]], {"index": i}, [], m.span)
        new.append(value)
    new.append(make_instr("store", anchor.type, [vp, value], {}, [], span))
    return anchor, new
