"""Copy coalescing around tensor-core accumulators (after the peepholes, before printing).

A loop-carried tile accumulator reaches PTX as three registers per element: out-of-SSA's
slot (the `local.set` at the back edge copies the matmul's result into it), the
`local.get` copy at the loop head, and the `wgmma`/`mma.sync` D vector. ptxas coalesces
such copies elsewhere, but not into the D vector of a tensor-core instruction, whose
registers it allocates as a group: in the attention loop on wgmma it kept the accumulator
in scattered registers and copied it back after every P·V group (32 `MOV` a key block at
d64, and 242 registers where 184 suffice), and the mma.sync form used 204 registers on
sm_80 where 164 suffice. This pass renames those copies away so the slot, the loop-head
value and the D vector are one PTX register.

It is Chaitin's aggressive coalescing on an interference graph built from liveness over
the function's basic blocks: two registers interfere when one is defined (by anything
but a copy of the other) where the other is live. Only unguarded `mov`s between virtual
registers of one class are coalesced, and only where one side is, or has already been
merged with, a D register. The register model is conservative: a guarded write also
reads its destination, a wgmma reads its D vector (`scale-d` may accumulate), an
instruction with no listed destination whose opcode may write counts its first operand
as written and read, and a wgmma's operands stay live until the `wgmma.wait_group 0`
that retires it (registers it reads or writes asynchronously are not renamed onto a
register written in between); a wgmma with no such wait in its block keeps its
registers out of the pass. An indirect branch leaves the function untouched.
"""
from __future__ import annotations

import re

from .instr import LABEL, NO_DEST, OP, Addr, PtxInstr, Vec

_REG = re.compile(r"%(?:rd|rs|fd|r|f|p)\d+\b")
_CLASS = re.compile(r"%[a-z]+")


def _regs(operand: str) -> list[str]:
    return _REG.findall(operand)


def _rename_operand(x: str, ren: dict[str, str]) -> str:
    if isinstance(x, Addr):
        return Addr(ren.get(x.base, x.base), x.offset)
    if isinstance(x, Vec):
        return Vec([ren.get(r, r) for r in x.regs])
    if ren.keys().isdisjoint(_regs(x)):
        return x
    return _REG.sub(lambda m: ren.get(m.group(0), m.group(0)), x)


def _copy(ins: PtxInstr) -> tuple[str, str] | None:
    """(dst, src) of an unguarded register-to-register `mov` within one class."""
    if ins.opcode != "mov" or ins.guard is not None or len(ins.dsts) != 1 or \
            len(ins.srcs) != 1:
        return None
    d, s = ins.dsts[0], ins.srcs[0]
    if type(d) is not str or type(s) is not str or not _REG.fullmatch(d) or \
            not _REG.fullmatch(s) or _CLASS.match(d).group(0) != _CLASS.match(s).group(0):
        return None
    return d, s


def _is_wgmma(ins: PtxInstr) -> bool:
    return ins.kind == OP and ins.name.startswith("wgmma.mma_async")


def _is_mma(ins: PtxInstr) -> bool:
    """A tensor-core instruction whose D vector the pass coalesces copies into."""
    return ins.kind == OP and ins.name.startswith(("wgmma.mma_async", "mma.sync"))


class _Facts:
    """Per instruction: registers written and read (module doc's conservative model)."""

    def __init__(self, body: list[PtxInstr]):
        self.defs: list[list[str]] = []
        self.uses: list[list[str]] = []
        for ins in body:
            if ins.kind != OP:
                self.defs.append([])
                self.uses.append([])
                continue
            defs = [r for x in ins.dsts for r in _regs(x)]
            uses = [r for x in ins.srcs for r in _regs(x)]
            if not ins.dsts and ins.srcs and ins.opcode not in NO_DEST:
                defs = _regs(ins.srcs[0])
            if ins.guard is not None:
                uses.append(ins.guard)
                uses += defs
            elif _is_wgmma(ins):
                uses += defs
            self.defs.append(defs)
            self.uses.append(uses)


def _blocks(body: list[PtxInstr]):
    """[(start, end)] of the basic blocks and each block's successor indices, or None when
    a branch target is not a label of the function (an indirect branch)."""
    starts = [0]
    for k, ins in enumerate(body):
        if ins.kind == LABEL and k:
            starts.append(k)
        elif ins.kind == OP and ins.opcode in ("bra", "ret", "exit", "brx") and \
                k + 1 < len(body):
            starts.append(k + 1)
    starts = sorted(set(starts))
    spans = [(a, b) for a, b in zip(starts, starts[1:] + [len(body)]) if a < b]
    at_label = {body[a].name: i for i, (a, _) in enumerate(spans) if body[a].kind == LABEL}
    succ = []
    for i, (a, b) in enumerate(spans):
        last = body[b - 1]
        out = []
        falls = True
        if last.kind == OP and last.opcode == "brx":
            return None
        if last.kind == OP and last.opcode == "bra":
            target = at_label.get(last.srcs[0])
            if target is None:
                return None
            out.append(target)
            falls = last.guard is not None
        elif last.kind == OP and last.opcode in ("ret", "exit") and last.guard is None:
            falls = False
        if falls and i + 1 < len(spans):
            out.append(i + 1)
        succ.append(out)
    return spans, succ


def _retire_uses(body, facts: _Facts, spans) -> set[str]:
    """Give each `wgmma.wait_group 0` a use of the registers of the wgmmas it retires (same
    block); return the registers of wgmmas no such wait follows (kept out of the pass)."""
    pinned: set[str] = set()
    for a, b in spans:
        pending: list[str] = []
        for k in range(a, b):
            ins = body[k]
            if _is_wgmma(ins):
                pending += facts.defs[k] + facts.uses[k]
            elif ins.kind == OP and ins.name.startswith("wgmma.wait_group") and \
                    ins.operands == ("0",):
                facts.uses[k] = facts.uses[k] + pending
                pending = []
        pinned.update(pending)
    return pinned


def run(body: list[PtxInstr]) -> list[PtxInstr]:
    if not any(_is_mma(i) for i in body):
        return body
    shape = _blocks(body)
    if shape is None:
        return body
    spans, succ = shape
    facts = _Facts(body)
    pinned = _retire_uses(body, facts, spans)
    tensor = {r for k, ins in enumerate(body) if _is_mma(ins) for r in facts.defs[k]}
    copies = [(k, c) for k, c in ((k, _copy(i)) for k, i in enumerate(body)) if c]
    cand = {r for _, c in copies for r in c} - pinned
    if not cand & tensor:
        return body
    names = sorted(cand)
    index = {r: n for n, r in enumerate(names)}
    cmask = (1 << len(index)) - 1

    # liveness of the candidate registers only (the others never interfere with them here)
    def bits(regs) -> int:
        m = 0
        for r in regs:
            n = index.get(r)
            if n is not None:
                m |= 1 << n
        return m
    dbits = [bits(d) for d in facts.defs]
    ubits = [bits(u) for u in facts.uses]
    gen, kill = [], []
    for a, b in spans:
        g = k_ = 0
        for k in range(b - 1, a - 1, -1):
            g = (g & ~dbits[k]) | ubits[k]
            k_ |= dbits[k]
        gen.append(g)
        kill.append(k_)
    live_in = [0] * len(spans)
    changed = True
    while changed:
        changed = False
        for i in range(len(spans) - 1, -1, -1):
            out = 0
            for s in succ[i]:
                out |= live_in[s]
            new = gen[i] | (out & ~kill[i])
            if new != live_in[i]:
                live_in[i], changed = new, True

    # interference rows: at each definition, every candidate live after it (x and y
    # interfere when either row names the other)
    row = [0] * len(index)
    copy_src = {k: c[1] for k, c in copies}
    for i, (a, b) in enumerate(spans):
        live = 0
        for s in succ[i]:
            live |= live_in[s]
        for k in range(b - 1, a - 1, -1):
            d = dbits[k]
            if d:
                others = live
                src = copy_src.get(k)
                if src in index:
                    others &= ~(1 << index[src])
                m = d
                while m:
                    low = m & -m
                    row[low.bit_length() - 1] |= (others | d) & ~low
                    m ^= low
            live = (live & ~d) | ubits[k]
    row = [r & cmask for r in row]     # one-sided: a merge checks both sides

    # union-find, merging copies that touch a wgmma D register
    parent = list(range(len(index)))
    members = [1 << n for n in range(len(index))]
    is_tensor = [r in tensor for r in names]

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n
    merged = True
    while merged:
        merged = False
        for _, (d, s) in copies:
            if d not in index or s not in index:
                continue
            x, y = find(index[d]), find(index[s])
            if x == y or not (is_tensor[x] or is_tensor[y]) or row[x] & members[y] or \
                    row[y] & members[x]:
                continue
            if is_tensor[y] and not is_tensor[x]:
                x, y = y, x                 # the D register names the merged set
            parent[y] = x
            is_tensor[x] = True
            row[x] |= row[y]
            members[x] |= members[y]
            merged = True
    ren = {r: names[find(n)] for r, n in index.items() if find(n) != n}
    if not ren:
        return body
    out = []
    for k, ins in enumerate(body):
        if ins.kind != OP or ren.keys().isdisjoint(facts.defs[k]) and \
                ren.keys().isdisjoint(facts.uses[k]):
            out.append(ins)
            continue
        new = ins.replaced(dsts=tuple(_rename_operand(x, ren) for x in ins.dsts),
                           srcs=tuple(_rename_operand(x, ren) for x in ins.srcs),
                           guard=ren.get(ins.guard, ins.guard))
        c = _copy(new)
        if c and c[0] == c[1]:
            continue                        # the copy the merge made empty
        out.append(new)
    return out
