"""CFG analyses shared by the IR verifiers and the optimizer.

The first group (orders, `predecessors`, post-dominators, regions) serves the verifiers and
is keyed by `id(block)`. The optimizer's group is keyed by the Block objects themselves:
`block_predecessors`, `DomTree` (idom, children, `dominates`, dominance `frontier`),
`LoopInfo` (the loop nest of natural loops: `Loop.header/latch(es)/blocks/exits/exiting/
preheader/parent/children`, `ensure_preheader`), `split_edge`, and counted-loop recognition
(`Loop.induction_variables()`, `Loop.trip_count()` -> `TripCount`). Loop passes build on
these; they never re-derive loops themselves.
"""
from __future__ import annotations

from .module import Block, Const, Function, Instr, UseMap
from .types import VOID


def reverse_postorder(fn: Function) -> list[Block]:
    """Blocks reachable from the entry, in reverse postorder (successor order kept)."""
    if not fn.blocks:
        return []
    entry = fn.blocks[0]
    seen = {entry}
    order: list[Block] = []
    terms = TERMINATORS
    ins = entry.instrs
    stack = [(entry, iter(ins[-1].targets if ins and ins[-1].op in terms else ()))]
    while stack:
        blk, it = stack[-1]
        for nxt in it:                       # resume this block's successors
            if nxt not in seen:
                seen.add(nxt)
                ins = nxt.instrs             # (successors() inlined: one call per block)
                stack.append((nxt, iter(ins[-1].targets if ins and ins[-1].op in terms
                                        else ())))
                break
        else:
            order.append(blk)
            stack.pop()
    order.reverse()
    return order


TERMINATORS = frozenset(("br", "cbr", "ret", "unreachable"))   # the ops ending a block


def successors(b: Block) -> list[Block]:
    """`b.successors` without the copy (callers must not mutate the list)."""
    ins = b.instrs
    if ins and ins[-1].op in TERMINATORS:
        return ins[-1].targets
    return []


def predecessors(fn: Function) -> dict[int, list[Block]]:
    preds: dict[int, list[Block]] = {id(b): [] for b in fn.blocks}
    for b in fn.blocks:
        for s in b.successors:
            preds[id(s)].append(b)
    return preds


def immediate_postdominators(fn: Function) -> dict[int, Block | None]:
    """ipdom per block id (None = the virtual exit). Iterative Cooper-Harvey-Kennedy on the
    reverse CFG; blocks that cannot reach an exit (infinite loops) get None."""
    blocks = reverse_postorder(fn)
    exits = [b for b in blocks if not b.successors]
    # post-order of the reverse graph = reverse of a reverse-graph RPO; compute numbering
    preds = predecessors(fn)
    order: list[Block] = []
    seen: set[int] = set()
    for e in exits:
        stack = [(e, 0)]
        seen.add(id(e))
        while stack:
            blk, i = stack.pop()
            ps = preds[id(blk)]
            if i < len(ps):
                stack.append((blk, i + 1))
                if id(ps[i]) not in seen:
                    seen.add(id(ps[i]))
                    stack.append((ps[i], 0))
            else:
                order.append(blk)
    num = {id(b): i for i, b in enumerate(order)}   # exit-side blocks have high numbers
    EXIT = len(order)
    ipdom: dict[int, int] = {}

    for e in exits:
        ipdom[id(e)] = EXIT
    changed = True
    while changed:
        changed = False
        for b in reversed(order):
            if not b.successors:
                continue
            cands = [num[id(s)] for s in b.successors if id(s) in ipdom]
            if not cands:
                continue
            new = cands[0]
            for c in cands[1:]:
                new = _meet(new, c, ipdom, order, EXIT)
            if ipdom.get(id(b)) != new:
                ipdom[id(b)] = new
                changed = True
    return {id(b): (None if ipdom.get(id(b), EXIT) == EXIT else order[ipdom[id(b)]])
            for b in fn.blocks}


def _meet(a: int, b: int, ipdom: dict[int, int], order: list[Block], exit_: int) -> int:
    while a != b:
        while a < b:
            a = ipdom[id(order[a])]
        while b < a:
            b = ipdom[id(order[b])]
    return a


def region_until(start: list[Block], stop: Block | None) -> list[Block]:
    """Blocks reachable from `start` without passing through `stop`."""
    out: list[Block] = []
    seen: set[int] = set()
    work = list(start)
    while work:
        b = work.pop()
        if b is stop or id(b) in seen:
            continue
        seen.add(id(b))
        out.append(b)
        work.extend(b.successors)
    return out


# ---- Analyses keyed by Block objects (identity-hashed), for the optimizer --------------

def remove_phi_arm(block: Block, pred: Block, uses: UseMap | None = None) -> None:
    """Drop one arm from `pred` in each phi of `block` (one CFG edge went away)."""
    for phi in block.phis:
        for k, t in enumerate(phi.targets):
            if t is pred:
                if uses is not None:
                    uses.drop(phi)
                del phi.operands[k]
                del phi.targets[k]
                if uses is not None:
                    uses.add(phi)
                break


def remove_unreachable(fn: Function) -> bool:
    """Delete blocks the entry cannot reach, and their phi arms in reachable blocks."""
    if not fn.blocks:
        return False
    live = {fn.blocks[0]}                      # reachability only: no order needed
    stack = [fn.blocks[0]]
    terms = TERMINATORS
    while stack:
        ins = stack.pop().instrs               # (successors() inlined)
        if ins and ins[-1].op in terms:
            for s in ins[-1].targets:
                if s not in live:
                    live.add(s)
                    stack.append(s)
    if len(live) == len(fn.blocks):
        return False
    dead = [b for b in fn.blocks if b not in live]
    if not dead:
        return False
    for b in dead:
        for s in b.successors:
            if s in live:
                remove_phi_arm(s, b)
    fn.blocks = [b for b in fn.blocks if b in live]
    # values of dead blocks may still be named by phis of other dead blocks only
    return True


def block_predecessors(fn: Function) -> dict[Block, list[Block]]:
    """Each block's predecessors in block order; a block branching twice to the same
    successor (cbr c, x, x) appears twice."""
    preds: dict[Block, list[Block]] = {b: [] for b in fn.blocks}
    terms = TERMINATORS
    for b in fn.blocks:
        ins = b.instrs                          # (successors() inlined: called per round)
        if ins and ins[-1].op in terms:
            for s in ins[-1].targets:
                preds[s].append(b)
    return preds


def _intersect(idom: list[int], a: int, c: int) -> int:
    """The nearest common dominator of RPO indices a and c (Cooper-Harvey-Kennedy)."""
    while a != c:
        while a > c:
            a = idom[a]
        while c > a:
            c = idom[c]
    return a


class DomTree:
    """The dominator tree (Cooper-Harvey-Kennedy) over the blocks reachable from entry.

    `idom[b]` is b's immediate dominator (None for the entry), `children[b]` its tree
    children in RPO, `frontier[b]` its dominance frontier (computed on first use).
    Unreachable blocks are absent from `rpo` and dominate/are dominated by nothing."""

    def __init__(self, fn: Function, preds: dict[Block, list[Block]] | None = None):
        self.fn = fn
        self.rpo = rpo = reverse_postorder(fn)
        self.preds = preds = preds if preds is not None else block_predecessors(fn)
        self.index = index = {b: i for i, b in enumerate(rpo)}
        n = len(rpo)
        idom: list[int] = [0] * n
        get = index.get
        # First pass in RPO over the forward edges (a retreating edge's source is not
        # numbered yet): the dominators of the graph without its retreating edges. The
        # tree's dicts are filled on the way (compile time: one loop).
        back: list[tuple[int, int]] = []    # retreating edges (source, target) by index
        tree: dict[Block, Block | None] = {rpo[0]: None} if rpo else {}
        children: dict[Block, list[Block]] = {b: [] for b in rpo}
        for i in range(1, n):
            b = rpo[i]
            ps = preds[b]
            if len(ps) == 1:                # (reached from its only predecessor, earlier)
                new = index[ps[0]]
            else:
                new = -1
                for p in ps:
                    j = get(p, -1)
                    if j >= i:
                        back.append((j, i))
                    elif j >= 0:
                        new = j if new < 0 else _intersect(idom, new, j)
            idom[i] = new
            d = rpo[new]
            tree[b] = d
            children[d].append(b)
        # When every retreating edge is a back edge (its target dominates its source: a
        # reducible graph, all structured code), those edges change no intersection and
        # the first pass is the answer (compile time: no confirming pass over every block).
        # Otherwise iterate Cooper-Harvey-Kennedy from there to the fixpoint.
        for j, i in back:
            while j > i:
                j = idom[j]
            if j != i:
                self._iterate(rpo, preds, get, idom)
                tree = {rpo[0]: None}
                children = {b: [] for b in rpo}
                for i in range(1, n):
                    b, d = rpo[i], rpo[idom[i]]
                    tree[b] = d
                    children[d].append(b)
                back = None
                break
        if n and back is not None:
            back += [(get(p), 0) for p in preds[rpo[0]] if p in index]
        # (source, target) indices of the back edges in RPO, None for an irreducible graph
        self.back_edges: list[tuple[int, int]] | None = back
        # a cycle among the reached blocks: a retreating edge (an edge into the entry too)
        self.cyclic = back is None or bool(back)
        self.idom: dict[Block, Block | None] = tree
        self.children: dict[Block, list[Block]] = children
        self._pre: dict[Block, int] | None = None     # numbered on first `dominates`
        self._post: dict[Block, int] = {}
        self._frontier: dict[Block, list[Block]] | None = None

    def merged(self, into: dict[Block, Block], preds: dict[Block, list[Block]]) -> None:
        """Update the tree after straight-line merges: each block b of `into` was appended
        to into[b], its only predecessor, which ended in `br b` (simplify-cfg). `preds` is
        the function's new predecessor map. Merging contracts an edge whose source has no
        other successor and whose target no other predecessor, so RPO is the old one minus
        the merged blocks and every other block keeps its dominators (with a merged block
        standing for the block it went into): the tree is what a rebuild would give."""
        old_rpo, old_idom = self.rpo, self.idom

        def final(b: Block) -> Block:
            while b in into:
                b = into[b]
            return b

        self.rpo = rpo = [b for b in old_rpo if b not in into]
        self.index = index = {b: i for i, b in enumerate(rpo)}
        self.preds = preds
        idom: dict[Block, Block | None] = {rpo[0]: None} if rpo else {}
        children: dict[Block, list[Block]] = {b: [] for b in rpo}
        for b in rpo[1:]:
            d = old_idom[b]
            while d in into:                # a merged block's idom is its predecessor
                d = old_idom[d]
            idom[b] = d
            children[d].append(b)
        self.idom, self.children = idom, children
        if self.back_edges is not None:
            self.back_edges = [(index[final(old_rpo[j])], index[final(old_rpo[i])])
                               for j, i in self.back_edges]
        self._pre, self._post, self._frontier = None, {}, None

    @staticmethod
    def _iterate(rpo, preds, get, idom) -> None:
        """Cooper-Harvey-Kennedy's rounds over every predecessor until none changes."""
        changed = True
        while changed:
            changed = False
            for i in range(1, len(rpo)):
                new = -1
                for p in preds[rpo[i]]:
                    j = get(p, -1)
                    if j < 0 or idom[j] < 0:
                        continue
                    new = j if new < 0 else _intersect(idom, new, j)
                if idom[i] != new:
                    idom[i] = new
                    changed = True

    def _number(self) -> dict[Block, int]:
        """Pre/post numbers of a DFS over the tree: a dominates b iff a's interval holds
        b's (mem2reg and gvn never ask, so they are not computed up front)."""
        pre: dict[Block, int] = {}
        post = self._post
        children = self.children
        n = 0
        stack: list = [self.rpo[0]] if self.rpo else []
        while stack:
            b = stack.pop()
            if b.__class__ is tuple:            # (b,): b's subtree is numbered
                post[b[0]] = n
                n += 1
                continue
            pre[b] = n
            n += 1
            kids = children[b]
            if kids:
                stack.append((b,))
                stack.extend(reversed(kids))
            else:
                post[b] = n
                n += 1
        self._pre = pre
        return pre

    def reachable(self, b: Block) -> bool:
        return b in self.index

    def dominates(self, a: Block, b: Block) -> bool:
        """a dominates b (reflexive)."""
        pre = self._pre if self._pre is not None else self._number()
        pa, pb = pre.get(a), pre.get(b)
        if pa is None or pb is None:
            return False
        return pa <= pb and self._post[b] <= self._post[a]

    def strictly_dominates(self, a: Block, b: Block) -> bool:
        return a is not b and self.dominates(a, b)

    def preorder(self) -> list[Block]:
        """Blocks in dominator-tree preorder (parents before children)."""
        pre = self._pre if self._pre is not None else self._number()
        return sorted(self.rpo, key=pre.__getitem__)

    @property
    def frontier(self) -> dict[Block, list[Block]]:
        if self._frontier is None:
            df: dict[Block, list[Block]] = {b: [] for b in self.rpo}
            idom, index = self.idom, self.index
            for b in self.rpo:
                ps = self.preds[b]
                if len(ps) < 2:
                    continue
                stop = idom[b]
                seen: set = set()              # runners that have b already (and above)
                for p in ps:
                    if p not in index:
                        continue
                    runner = p
                    while runner is not None and runner is not stop and runner not in seen:
                        seen.add(runner)
                        df[runner].append(b)
                        runner = idom[runner]
            self._frontier = df
        return self._frontier


_UNKNOWN = object()


class Loop:
    """A natural loop. `header` dominates every block; `latches` are the in-loop
    predecessors of the header (`latch` when there is exactly one); `blocks` lists the body
    in RPO, header first; `exits` are the blocks outside the loop that a body block
    branches to, and `exiting` the body blocks that do; `preheader` is the header's only
    out-of-loop predecessor when that block has the header as its only successor (else
    None: `ensure_preheader` makes one). `parent`/`children` form the loop nest."""

    def __init__(self, fn: Function, header: Block, latches: list[Block]):
        self.fn = fn
        self.header = header
        self.latches = latches
        self.block_set: set[Block] = set()
        self.blocks: list[Block] = []
        self.parent: Loop | None = None
        self.children: list[Loop] = []
        self.exits: list[Block] = []
        self.exiting: list[Block] = []
        self.preheader: Block | None = None
        self._trip = _UNKNOWN             # trip_count(), kept until the IR changes

    def __repr__(self) -> str:
        return f"Loop({self.header.name}, {len(self.blocks)} blocks)"

    @property
    def latch(self) -> Block | None:
        return self.latches[0] if len(self.latches) == 1 else None

    @property
    def depth(self) -> int:
        d, p = 1, self.parent
        while p is not None:
            d, p = d + 1, p.parent
        return d

    def contains(self, b: Block) -> bool:
        return b in self.block_set

    def is_invariant(self, v) -> bool:
        """True for values not defined inside the loop (constants, params, outer instrs)."""
        return not (isinstance(v, Instr) and v.block in self.block_set)

    def induction_variables(self) -> list["InductionVariable"]:
        return find_induction_variables(self)

    def trip_count(self) -> "TripCount | None":
        """The counted-loop shape, when recognised (see `TripCount`). Kept for the next
        loop pass; the pass manager's `LoopInfo.forget_facts` drops it after a change."""
        if self._trip is _UNKNOWN:
            self._trip = find_trip_count(self)
        return self._trip


class LoopInfo:
    """The loop nest of a function: `loops` outermost-first in RPO of headers,
    `top_level`, and `loop_of[b]` the innermost loop containing b."""

    def __init__(self, fn: Function, dom: DomTree):
        self.fn = fn
        latches: dict[Block, list[Block]] = {}
        rpo = dom.rpo
        if dom.back_edges is not None:      # the tree found them (a reducible graph)
            for j, i in sorted(dom.back_edges):     # (latches in RPO, as the scan below)
                latches.setdefault(rpo[i], []).append(rpo[j])
        else:
            index = dom.index
            for b in rpo:
                for s in successors(b):     # (a header comes first in RPO: test that first)
                    if index.get(s, -1) <= index[b] and dom.dominates(s, b):
                        latches.setdefault(s, []).append(b)
        self.loops: list[Loop] = []
        preds, reached = dom.preds, dom.index
        for h in rpo:
            if h not in latches:
                continue
            lp = Loop(fn, h, latches[h])
            body = {h}
            work = [t for t in latches[h] if t is not h]
            body.update(work)
            while work:
                b = work.pop()
                for p in preds[b]:
                    if p not in body and p in reached:
                        body.add(p)
                        work.append(p)
            lp.block_set = body
            lp.blocks = [b for b in rpo if b in body]
            self.loops.append(lp)
        # nest: the parent is the smallest enclosing loop (headers in RPO: outer first)
        for lp in self.loops:
            best = None
            for other in self.loops:
                if other is not lp and lp.header in other.block_set and \
                        lp.block_set <= other.block_set and \
                        (best is None or len(other.block_set) < len(best.block_set)):
                    best = other
            lp.parent = best
            if best is not None:
                best.children.append(lp)
        self.top_level = [lp for lp in self.loops if lp.parent is None]
        self.loop_of: dict[Block, Loop] = {}
        for lp in sorted(self.loops, key=lambda l: -len(l.block_set)):
            for b in lp.blocks:
                self.loop_of[b] = lp          # smaller (inner) loops overwrite outer ones
        for lp in self.loops:
            _fill_edges(lp, dom.preds)

    @classmethod
    def empty(cls, fn: Function) -> "LoopInfo":
        """The loop nest of a function known to have no cycle."""
        li = cls.__new__(cls)
        li.fn, li.loops, li.top_level, li.loop_of = fn, [], [], {}
        return li

    def innermost_first(self) -> list[Loop]:
        return sorted(self.loops, key=lambda l: -l.depth)

    def forget_facts(self) -> None:
        """Drop what the loops derived from instructions (trip counts): the IR changed
        while the loop nest stayed valid."""
        for lp in self.loops:
            lp._trip = _UNKNOWN


def _fill_edges(lp: Loop, preds: dict[Block, list[Block]]) -> None:
    exits: list[Block] = []
    exiting: list[Block] = []
    for b in lp.blocks:
        for s in successors(b):
            if s not in lp.block_set:
                if s not in exits:
                    exits.append(s)
                if b not in exiting:
                    exiting.append(b)
    lp.exits, lp.exiting = exits, exiting
    outside = [p for p in preds[lp.header] if p not in lp.block_set]
    lp.preheader = outside[0] if len(outside) == 1 and \
        outside[0].successors == [lp.header] else None


def ensure_preheader(lp: Loop) -> tuple[Block, bool]:
    """Return the loop's preheader, creating one when needed: a new block that the header's
    outside predecessors branch to, holding merged phis for the header's outside incoming
    values. Returns (preheader, created). Callers invalidate CFG analyses when created."""
    if lp.preheader is not None:
        return lp.preheader, False
    fn, header = lp.fn, lp.header
    outside = [p for p in block_predecessors(fn)[header] if p not in lp.block_set]
    used = {b.name for b in fn.blocks}
    name, n = f"{header.name}.preheader", 1
    while name in used:
        name, n = f"{header.name}.preheader.{n}", n + 1
    pre = Block(name, function=fn)
    fn.blocks.insert(fn.blocks.index(header), pre)
    for p in dict.fromkeys(outside):
        term = p.terminator
        term.targets = [pre if t is header else t for t in term.targets]
    for phi in header.phis:
        ins_vals = [(v, b) for v, b in phi.incoming if b not in lp.block_set]
        rest = [(v, b) for v, b in phi.incoming if b in lp.block_set]
        if len(ins_vals) == 1 or len({id(v) for v, _ in ins_vals}) == 1:
            merged = ins_vals[0][0]
        else:
            merged = pre.append(Instr("phi", phi.type, [v for v, _ in ins_vals], {},
                                      [b for _, b in ins_vals], phi.span))
        phi.operands = [merged] + [v for v, _ in rest]
        phi.targets = [pre] + [b for _, b in rest]
    pre.append(Instr("br", VOID, [], {}, [header]))
    lp.preheader = pre
    outer = lp.parent
    while outer is not None:                   # the new block belongs to enclosing loops
        outer.block_set.add(pre)
        outer.blocks.insert(outer.blocks.index(header), pre)
        outer = outer.parent
    return pre, True


def split_edge(fn: Function, src: Block, dst: Block) -> Block:
    """Insert an empty block on the edge src -> dst (every src->dst edge), fixing dst's phis."""
    used = {b.name for b in fn.blocks}
    name, n = f"{src.name}.{dst.name}", 1
    while name in used:
        name, n = f"{src.name}.{dst.name}.{n}", n + 1
    mid = Block(name, function=fn)
    fn.blocks.insert(fn.blocks.index(src) + 1, mid)
    term = src.terminator
    term.targets = [mid if t is dst else t for t in term.targets]
    mid.append(Instr("br", VOID, [], {}, [dst]))
    for phi in dst.phis:
        phi.targets = [mid if t is src else t for t in phi.targets]
    return mid


# ---- Induction variables and trip counts ------------------------------------------------

class InductionVariable:
    """A header phi `iv = phi [init, outside], [iv + step, latch]` with a loop-invariant
    constant integer `step` (negative for `iv - c`). `update` is the add/sub instruction."""

    def __init__(self, phi, init, step: int, update):
        self.phi, self.init, self.step, self.update = phi, init, step, update

    def __repr__(self) -> str:
        return f"IV({self.phi!r}, step={self.step})"


def find_induction_variables(lp: Loop) -> list[InductionVariable]:
    latch = lp.latch
    if latch is None:
        return []
    out = []
    for phi in lp.header.phis:
        if not phi.type.is_int or len(phi.operands) != 2:
            continue
        (v0, v1), (t0, t1) = phi.operands, phi.targets
        if t0 is latch and t1 is not latch:     # one arm from the latch, one from outside
            upd, init = v0, v1
        elif t1 is latch and t0 is not latch:
            upd, init = v1, v0
        else:
            continue
        if not isinstance(upd, Instr) or upd.op not in ("add", "sub"):
            continue
        a, b = upd.operands
        step = None
        if a is phi and isinstance(b, Const):
            step = b.value if upd.op == "add" else -b.value
        elif b is phi and isinstance(a, Const) and upd.op == "add":
            step = a.value
        if step:
            out.append(InductionVariable(phi, init, int(step), upd))
    return out


class TripCount:
    """A counted loop: `iv` runs from `init` by `step` while `iv_or_next PRED bound` holds,
    tested by the loop's only exiting block. `tests_next` says whether the compare reads
    the updated value (a latch test) or the phi (a header test). `count` is the number of
    body iterations when init and bound are constants and the IV cannot wrap (else None)."""

    def __init__(self, iv: InductionVariable, bound, pred: str, tests_next: bool,
                 exiting, count: int | None):
        self.iv, self.bound, self.pred = iv, bound, pred
        self.tests_next, self.exiting, self.count = tests_next, exiting, count

    @property
    def init(self):
        return self.iv.init

    @property
    def step(self) -> int:
        return self.iv.step

    def __repr__(self) -> str:
        return f"TripCount({self.iv!r}, {self.pred}, count={self.count})"


_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def find_trip_count(lp: Loop) -> TripCount | None:
    if len(lp.exiting) != 1 or lp.latch is None:
        return None
    exiting = lp.exiting[0]
    term = exiting.terminator
    if term.op != "cbr" or not isinstance(term.operands[0], Instr):
        return None
    cond = term.operands[0]
    if cond.op != "cmp":
        return None
    stay_on_true = term.targets[0] in lp.block_set
    if stay_on_true == (term.targets[1] in lp.block_set):
        return None
    pred = cond.attrs["pred"]
    a, b = cond.operands
    for iv in lp.induction_variables():
        for side, other, p in ((a, b, pred), (b, a, _SWAP[pred])):
            if side is iv.phi:
                tests_next = False
            elif side is iv.update:
                tests_next = True
            else:
                continue
            if not lp.is_invariant(other):
                continue
            if not stay_on_true:
                p = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne",
                     "ne": "eq"}[p]
            count = None
            if isinstance(iv.init, Const) and isinstance(other, Const):
                count = _count(iv.init.value, other.value, iv.step, p, tests_next,
                               exiting is lp.header, exiting is lp.latch)
                t = iv.phi.type
                if count is not None:
                    last = iv.init.value + (count + 1) * iv.step   # the value that exits
                    if t.wrap(last) != last:
                        count = None
            return TripCount(iv, other, p, tests_next, exiting, count)
    return None


def _count(init: int, bound: int, step: int, pred: str, tests_next: bool,
           header_test: bool, latch_test: bool) -> int | None:
    """Body iterations of `for (v = init; v PRED bound; v += step)` (the header tests the
    phi), or of the do-while shape (the latch tests the updated value, as a single-block
    loop does). None for other shapes."""
    def holds(v: int) -> bool:
        return {"lt": v < bound, "le": v <= bound, "gt": v > bound, "ge": v >= bound,
                "ne": v != bound, "eq": v == bound}[pred]
    if pred in ("lt", "le") and step <= 0 or pred in ("gt", "ge") and step >= 0:
        return None
    if pred == "ne":
        if (bound - init) % step:
            return None
    if pred == "eq":
        return None
    if not tests_next and header_test:
        # iterations = number of v in init, init+step, ... for which holds(v)
        if not holds(init):
            return 0
        if pred == "ne":
            return (bound - init) // step
        span = bound - init + (1 if pred == "le" else -1 if pred == "ge" else 0)
        return max(0, -(-span // step)) if step > 0 else max(0, -(-span // step))
    if tests_next and latch_test:
        # body runs once, then again while holds(init + k*step)
        n, v = 1, init + step
        if pred == "ne":
            return (bound - init) // step
        span = bound - v + (1 if pred == "le" else -1 if pred == "ge" else 0)
        more = -(-span // step) if holds(v) else 0
        return n + max(0, more)
    return None
