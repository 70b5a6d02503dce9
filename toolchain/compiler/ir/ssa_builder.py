"""SSA construction while a frontend builds (Braun et al., "Simple and Efficient
Construction of Static Single Assignment Form", CC 2013).

A `Builder` with `ssa` set turns `local_get`/`local_set` of a scalar `Local` into reads and
writes of the variable's current value per block: no instruction is made, and a phi goes
where a read meets several predecessors with different values. It is what `opt/mem2reg.py`
would build from the slot form (same semantics: a read that no write reaches reads zero),
without making the slot instructions, a dominator tree or a frontier first (compile time:
GPU -O; plain compiles keep the slot form, which the backends consume directly).

The builder reports each edge as it emits `br`/`cbr`, and a block is *sealed* (all its
predecessors known) when the frontend starts filling it, unless the frontend deferred it
first: loop headers, whose back edges come after their body (`defer_seal`, then `seal`).
A read in an unsealed block makes an operandless phi, completed when the block is sealed.
An edge into a sealed block is a frontend bug and raises `IRTypeError`.

A variable the frontend declares and never assigns again (`Builder.local_set(...,
final=True)`) has one value wherever it is in scope: reads return it without a walk, and
it needs no phis (most variables are of that kind; without it every loop would make, then
remove, a trivial header phi for each of them it reads).

Phis found trivial (one value besides themselves) are removed and remembered in
`replaced`; `finish` rewrites the operands that still name them (one walk, only when a
removed phi had been handed out). Phis that become trivial only later are left to
simplify-cfg's phi sweep. The walks are iterative: long chains of blocks (a switch of many
cases, many ifs in a row) cost no Python recursion.
"""
from __future__ import annotations

from .module import Block, Const, Instr, Local
from .types import FloatType, Type


def zero(t: Type) -> Const:
    """The zero constant of a scalar type: what a never-written variable reads."""
    if isinstance(t, FloatType):
        return Const(t, 0.0)
    if t.is_bool:
        return Const(t, False)
    return Const(t, 0)


_NONE = object()


class SSABuilder:
    def __init__(self) -> None:
        self.defs: dict[Block, dict[Local, object]] = {}
        self.preds: dict[Block, list[Block]] = {}
        self.sealed: set[Block] = set()
        self.deferred: set[Block] = set()
        self.incomplete: dict[Block, list[Instr]] = {}
        self.phi_local: dict[Instr, Local] = {}
        self.replaced: dict[Instr, object] = {}
        self.zeros: dict[Local, Const] = {}     # one per variable, as mem2reg has
        self.read_consts: set[Const] = set()    # Builder.local_get's constant reads
        self.fixed: dict[Local, object] = {}    # written once, at their declaration

    # ---- the CFG as the frontend builds it -------------------------------------------
    def edge(self, src: Block, dst: Block) -> None:
        if dst in self.sealed:
            from .builder import IRTypeError
            raise IRTypeError(f"SSA construction: edge {src.name} -> {dst.name} into a "
                              "sealed block (defer_seal it first)")
        ps = self.preds.get(dst)
        if ps is None:
            self.preds[dst] = [src]
        else:
            ps.append(src)

    def entered(self, block: Block) -> None:
        """The frontend starts filling `block`: its predecessors are all known unless it
        was deferred."""
        if block not in self.sealed and block not in self.deferred:
            self.seal(block)

    def defer_seal(self, block: Block) -> None:
        self.deferred.add(block)

    def seal(self, block: Block) -> None:
        if block in self.sealed:
            return
        self.sealed.add(block)
        self.deferred.discard(block)
        phis = self.incomplete.pop(block, None)
        if phis:
            self._complete(phis)

    # ---- variables -------------------------------------------------------------------
    def write(self, loc: Local, block: Block, value) -> None:
        d = self.defs.get(block)
        if d is None:
            self.defs[block] = {loc: value}
        else:
            d[loc] = value

    def read(self, loc: Local, block: Block):
        d = self.defs.get(block)
        if d is not None:
            v = d.get(loc, _NONE)
            if v is not _NONE:
                return self._resolve(v) if self.replaced else v
        pending: list[Instr] = []
        v = self._walk(loc, block, pending)
        if pending:
            self._complete(pending)
        return self._resolve(v) if self.replaced else v

    def _resolve(self, v):
        r = self.replaced
        while v in r:
            v = r[v]
        return v

    def _walk(self, loc: Local, block: Block, pending: list):
        """The value of `loc` at the end of `block`: up the chain of single predecessors to
        a definition, an unsealed block (incomplete phi), a merge (a phi queued in
        `pending` for its arms) or a block without predecessors (zero). Every block passed
        records the result."""
        chain = []
        defs, sealed, preds = self.defs, self.sealed, self.preds
        while True:
            d = defs.get(block)
            if d is not None:
                v = d.get(loc, _NONE)
                if v is not _NONE:
                    break
            if block not in sealed:
                v = self._phi(loc, block)
                self.incomplete.setdefault(block, []).append(v)
                self.write(loc, block, v)
                break
            ps = preds.get(block)
            if not ps:
                v = self._zero(loc)
                self.write(loc, block, v)
                break
            if len(ps) == 1:
                chain.append(block)
                block = ps[0]
                continue
            v = self._phi(loc, block)
            self.write(loc, block, v)        # before its arms: breaks cycles through it
            pending.append(v)
            break
        for b in chain:
            self.write(loc, b, v)
        return v

    def _zero(self, loc: Local) -> Const:
        v = self.zeros.get(loc)
        if v is None:
            v = self.zeros[loc] = zero(loc.type)
        return v

    def _phi(self, loc: Local, block: Block) -> Instr:
        phi = Instr("phi", loc.type, [], {}, [], None, block)
        block.instrs.insert(0, phi)
        self.phi_local[phi] = loc
        return phi

    def _complete(self, phis: list[Instr]) -> None:
        """Give `phis` (and the phis their arms make) one arm per predecessor edge, then
        remove the trivial ones."""
        made = list(phis)
        work = list(phis)
        while work:
            phi = work.pop()
            loc = self.phi_local[phi]
            found: list[Instr] = []
            for p in self.preds.get(phi.block, ()):
                phi.operands.append(self._walk(loc, p, found))
                phi.targets.append(p)
            work.extend(found)
            made.extend(found)
        self._remove_trivial(made)

    def _remove_trivial(self, phis: list[Instr]) -> None:
        replaced = self.replaced
        changed = True
        live = phis
        while changed:
            changed = False
            keep = []
            for phi in live:
                same = None
                trivial = True
                for o in phi.operands:
                    while o in replaced:
                        o = replaced[o]
                    if o is phi or o is same:
                        continue
                    if same is not None:
                        trivial = False
                        break
                    same = o
                if not trivial:
                    keep.append(phi)
                    continue
                replaced[phi] = same if same is not None else \
                    self._zero(self.phi_local[phi])
                phi.block.instrs.remove(phi)
                phi.block = None
                changed = True
            live = keep

    # ---- the end of a function -------------------------------------------------------
    def finish(self, fn) -> None:
        """Seal what is left (a loop header whose lowering stopped at an error: only
        deferred blocks are ever unsealed), rewrite operands that name removed phis, and
        drop the promoted (scalar) slots from `fn.locals`."""
        for b in list(self.deferred):
            self.seal(b)
        fn.locals = [l for l in fn.locals if not l.type.is_scalar]
        replaced = self.replaced
        if not replaced:
            return
        resolve = self._resolve
        for b in fn.blocks:
            for ins in b.instrs:
                ops = ins.operands
                k = 0
                for o in ops:
                    if o in replaced:
                        ops[k] = resolve(o)
                    k += 1
