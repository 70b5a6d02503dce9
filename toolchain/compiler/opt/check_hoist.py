"""check-hoist: remove the run-time checks (`check.*`, ir/checks.py) that -O proves redundant.

-O keeps every check that can fail and reports the same failure as the plain build (the
same check, index and location), but:
1. removes a check that cannot fail: a constant index inside its length, a nonzero
   constant divisor, the address of a variable, or the same check (same operands)
   already done on every path to it (it dominates);
2. hoists checks out of loops into the preheader, guarded by "the loop body runs at all"
   (the header's test at entry), so they run once per loop instead of once per iteration:
   - a loop-invariant check whose block runs on every iteration (it dominates the latch);
   - the index check of a counted loop `for i in lo..hi` (step 1, tested at the header)
     on `i + c`: one `check.range` of lo+c .. hi+c-1 against the invariant length, which
     reports the first failing index, the one the loop would have failed on.
   A loop is only touched when moving its checks earlier cannot be observed: it contains
   no call (nothing it could print or write elsewhere before failing), every check before
   a hoisted one (in an iteration) is hoisted too, and the first failure stays the same
   one: the hoisted checks repeat their first iteration in order (`check.index` of the
   first index), then the ranges, ordered by the iteration they first fail at (several
   ranges only with constant lengths).
Innermost loops first, so a check leaves a loop nest one level at a time. Each removal and
hoist is an `--explain` remark.
"""
from __future__ import annotations

from ..ir.cfg import ensure_preheader
from ..ir.module import Const, Function, Global, Instr
from ..ir.ops import CHECK_OPS
from ..ir.types import BOOL, I64
from .edit import make_instr, speculation_safe

_OBSERVABLE = frozenset(("call", "call_indirect", "gpu.launch"))
_NONNULL = frozenset(("alloca", "fieldptr", "elemptr"))
_PRED = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
         "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
_INVERSE = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq"}


def run(fn, analyses) -> bool:
    if analyses.gpu or not any(op in CHECK_OPS for op in analyses.get("ops")):
        return False              # (device code never has checks: no census walk)
    changed = _remove_redundant(fn, analyses)
    loops = analyses.get("loops")
    if loops.loops:
        for lp in loops.innermost_first():
            if _hoist_loop(fn, lp, analyses):
                changed = True
        if changed:
            _remove_redundant(fn, analyses, rebuild=True)
    return changed


def _line(ins) -> str:
    return ins.attrs.get("site", "?").rsplit(":", 2)[-2] if ins.attrs.get("site") else "?"


# ---------------------------------------------------------------- redundant checks
def _never_fails(ins: Instr) -> str | None:
    ops = ins.operands
    if ins.attrs.get("guarded") and isinstance(ops[-1], Const) and not ops[-1].value:
        return "its guard is false"
    if ins.op == "check.index":
        i, n = ops[0], ops[1]
        if isinstance(i, Const) and isinstance(n, Const) and 0 <= i.value < n.value:
            return f"the constant index {i.value} is inside the length {n.value}"
    elif ins.op == "check.nonzero":
        if isinstance(ops[0], Const) and ops[0].value != 0:
            return "the divisor is a nonzero constant"
    elif ins.op == "check.null":
        p = ops[0]
        if isinstance(p, Instr) and p.op in _NONNULL:
            return "the pointer is the address of a variable"
        if isinstance(p, (Function, Global)):
            return f"the pointer is the address of @{p.name}"
    return None


def _key(ins: Instr):
    return (ins.op, ins.attrs.get("what"), tuple(id(o) for o in ins.operands),
            bool(ins.attrs.get("guarded")))


def _remove_redundant(fn, analyses, rebuild: bool = False) -> bool:
    """Drop checks that cannot fail, and those an identical unguarded check dominates."""
    if rebuild and analyses.cfg_changed:
        analyses.invalidate(("cfg",))
    dom = analyses.get("domtree")
    changed = False
    done: dict = {}                      # key -> the check that dominates this point
    stack = [(dom.rpo[0], False)] if dom.rpo else []
    scopes: list[list] = []
    while stack:
        blk, leaving = stack.pop()
        if leaving:
            for k in scopes.pop():
                del done[k]
            continue
        added = []
        for ins in list(blk.instrs):
            if ins.op not in CHECK_OPS:
                continue
            why = _never_fails(ins)
            if why is None:
                k = _key(ins)
                first = done.get(k)
                if first is not None:
                    why = f"the same check on line {_line(first)} already passed"
                elif not ins.attrs.get("guarded"):
                    done[k] = ins
                    added.append(k)
            if why is not None:
                blk.instrs.remove(ins)
                ins.block = None
                analyses.remark(ins.span, "check-hoist", f"removed {ins.op}: {why}")
                changed = True
        scopes.append(added)
        stack.append((blk, True))
        for child in reversed(dom.children.get(blk, ())):
            stack.append((child, False))
    return changed


# ---------------------------------------------------------------- loops
class _Hoister:
    """Moves one loop's checks into its preheader (see the module docstring)."""

    def __init__(self, lp):
        self.lp = lp
        self.inside = lp.block_set
        self.moves: list[Instr] = []           # pure loop instructions the checks need
        self.moving: set = set()

    # -- invariance, moving pure operands along
    def invariant(self, v, depth: int = 0) -> bool:
        if not (isinstance(v, Instr) and v.block in self.inside) or v in self.moving:
            return True
        if depth > 8 or v.op == "phi" or not speculation_safe(v):
            return False
        if all(self.invariant(o, depth + 1) for o in v.operands):
            self.moving.add(v)
            self.moves.append(v)
            return True
        return False

    def try_invariant(self, values) -> bool:
        mark = len(self.moves)
        if all(self.invariant(v) for v in values):
            return True
        for v in self.moves[mark:]:
            self.moving.discard(v)
        del self.moves[mark:]
        return False

    # -- the range of an index `i + c` over a counted loop
    @staticmethod
    def index_range(idx, tc):
        """The constant c when the i64 index `idx` is the counted loop's IV i plus c (or
        its conversion: `(int64)i + c`, `(int64)(i + c)`), else None."""
        c = 0
        if isinstance(idx, Instr) and idx.op in ("add", "sub") and \
                isinstance(idx.operands[1], Const):
            c = idx.operands[1].value * (1 if idx.op == "add" else -1)
            idx = idx.operands[0]
        iv = tc.iv.phi.type
        if not iv.signed and iv.bits >= 64:
            return None         # (i64 arithmetic would see its upper half as negative)
        if isinstance(idx, Instr) and idx.op == "convert" and idx.operands[0].type.is_int:
            inner = idx.operands[0]
            if c == 0 and isinstance(inner, Instr) and inner.op in ("add", "sub") and \
                    isinstance(inner.operands[1], Const) and inner.type.signed:
                # (an unsigned `i - 1` wraps where the i64 range would go negative)
                c = inner.operands[1].value * (1 if inner.op == "add" else -1)
                inner = inner.operands[0]
            idx = inner
        if idx is tc.iv.phi:
            return c
        return None


def _entry_guard(lp, pre):
    """The bool 'the loop body runs at least once', built in the preheader from the
    header's test with the header phis at their entry values; True when the test is at
    the latch (the body runs once before it). None when it cannot be built."""
    if lp.exiting == [lp.latch] and lp.latch is not lp.header:
        return True
    if lp.exiting != [lp.header]:
        return None
    term = lp.header.terminator
    if term.op != "cbr":
        return None
    enter_on_true = term.targets[0] in lp.block_set
    mapped: dict = {}

    def entry_value(v, depth=0):
        if not (isinstance(v, Instr) and v.block in lp.block_set):
            return v
        if v in mapped:
            return mapped[v]
        if v.block is not lp.header or depth > 8:
            return None
        if v.op == "phi":
            val = mapped[v] = _entry_value_of(v, pre)
            return val
        if not speculation_safe(v):
            return None
        ops = [entry_value(o, depth + 1) for o in v.operands]
        if any(o is None for o in ops):
            return None
        copy = v.clone()
        copy.operands = ops
        pre.insert(len(pre.instrs) - 1, copy)
        mapped[v] = copy
        return copy

    cond = term.operands[0]
    if isinstance(cond, Instr) and cond.op == "cmp" and not enter_on_true:
        a, c = (entry_value(o) for o in cond.operands)
        if a is None or c is None:
            return None
        pred = _INVERSE[cond.attrs["pred"]]
        if isinstance(a, Const) and isinstance(c, Const) and a.type.is_int:
            runs = _PRED[pred](a.value, c.value)     # e.g. `for r in 0..5`: it does
            return True if runs else Const(BOOL, False)
        g = make_instr("cmp", BOOL, [a, c], {"pred": pred}, [], cond.span)
        return pre.insert(len(pre.instrs) - 1, g)
    g = entry_value(cond)
    if g is None or not enter_on_true:
        return None
    return g


def _hoist_loop(fn, lp, analyses) -> bool:
    checks: list[Instr] = []
    for b in lp.blocks:
        for ins in b.instrs:
            if ins.op in _OBSERVABLE:
                return False
            if ins.op in CHECK_OPS:
                checks.append(ins)
    if not checks or lp.latch is None:
        return False
    dom = analyses.get("domtree")
    h = _Hoister(lp)
    tc = None
    plan: list[tuple[Instr, str, object]] = []      # (check, "inv"|"range", offset)
    for ins in checks:
        every_iteration = dom.dominates(ins.block, lp.latch)
        kind = None
        if every_iteration and h.try_invariant(ins.operands):
            kind, extra = "inv", None
        elif every_iteration and ins.op == "check.index" and ins.block is not lp.header \
                and not ins.attrs.get("guarded") and h.try_invariant([ins.operands[1]]):
            if tc is None:
                tc = lp.trip_count() or False
            c = h.index_range(ins.operands[0], tc) if tc else None
            if c is not None and tc.step == 1 and not tc.tests_next and \
                    tc.exiting is lp.header and tc.pred in ("lt", "le") and \
                    h.try_invariant([tc.bound]):
                kind, extra = "range", c
        if kind is None:
            break                       # later checks must not overtake this one
        plan.append((ins, kind, extra))
    ranges = [p for p in plan if p[1] == "range"]
    if ranges and (len(plan) < len(checks) or len(ranges) > 1 and
                   not all(isinstance(p[0].operands[1], Const) for p in ranges)):
        plan = plan[:plan.index(ranges[0])]        # a range fails late: nothing after it
        ranges = []
    if not plan:
        return False
    pre, created = ensure_preheader(lp)
    if created:                         # (the loop nest stays exact: ensure_preheader)
        analyses.cfg_changed = True
        analyses.invalidate(("preds", "domtree"))
    size = len(pre.instrs)
    guard = _entry_guard(lp, pre)
    if guard is None:
        return created or len(pre.instrs) != size     # (unused guard copies: dce's)
    for v in h.moves:                   # the pure operands, in dependency order
        if v.block is not None:
            v.block.instrs.remove(v)
        pre.insert(len(pre.instrs) - 1, v)
    where = lp.header.name
    emit = _Emitter(pre, guard)
    init = _entry_value_of(tc.iv.phi, pre) if ranges else None
    for ins, kind, c in plan:
        if kind == "inv":
            emit.move(ins, ins.block is lp.header)
            analyses.remark(ins.span, "check-hoist", f"hoisted {ins.op} out of the loop at "
                            f"{where}: its operands are loop-invariant")
        elif len(plan) > 1:             # the first iteration's check, in its place
            emit.first_index(ins, init, c)
    for ins, _, c in sorted(ranges, key=lambda p: p[0].operands[1].value - p[2]
                            if isinstance(p[0].operands[1], Const) else 0):
        emit.range(ins, init, tc, c)
        analyses.remark(ins.span, "check-hoist", f"hoisted {ins.op} out of the loop at "
                        f"{where}: the index runs over a counted range, checked once as "
                        "check.range")
    return True


def _entry_value_of(phi: Instr, pre):
    for val, src in phi.incoming:
        if src is pre:
            return val
    return None


class _Emitter:
    def __init__(self, pre, guard):
        self.pre, self.guard = pre, guard

    def put(self, ins: Instr) -> Instr:
        ins.block = None
        return self.pre.insert(len(self.pre.instrs) - 1, ins)

    def _guarded(self, ins: Instr, operands: list, always: bool = False,
                 op: str | None = None) -> Instr:
        """`ins`'s kind of check (or the check `op`) on `operands`, under this loop's guard
        (unless `always`: a check in the header runs even when the body does not) and its
        own."""
        g = True if always else self.guard
        if ins.attrs.get("guarded"):
            own = ins.operands[-1]
            if isinstance(own, Const):
                own = True if own.value else own
            if g is True or isinstance(g, Const):
                g = own if g is True else g
            elif own is not True:
                g = self.put(make_instr("and", BOOL, [g, own], {}, [], ins.span))
        attrs = dict(ins.attrs)
        attrs.pop("guarded", None)
        if g is not True:
            operands = operands + [g]
            attrs["guarded"] = True
        return make_instr(op or ins.op, ins.type, operands, attrs, [], ins.span)

    def move(self, ins: Instr, always: bool) -> None:
        ops = ins.operands[:-1] if ins.attrs.get("guarded") else list(ins.operands)
        new = self._guarded(ins, ops, always)
        ins.block.instrs.remove(ins)
        ins.block = None
        self.put(new)

    def _ext(self, v, span):
        if v.type == I64:
            return v
        if isinstance(v, Const):
            return Const(I64, v.value)
        return self.put(make_instr("convert", I64, [v], {}, [], span))

    def _plus(self, v, c: int, span):
        if c == 0:
            return v
        if isinstance(v, Const):
            return Const(I64, v.value + c)
        return self.put(make_instr("add", I64, [v, Const(I64, c)], {}, [], span))

    def first_index(self, ins: Instr, init, c: int) -> None:
        first = self._plus(self._ext(init, ins.span), c, ins.span)
        self.put(self._guarded(ins, [first, ins.operands[1]]))

    def range(self, ins: Instr, init, tc, c: int) -> None:
        first = self._plus(self._ext(init, ins.span), c, ins.span)
        end = self._plus(self._ext(tc.bound, ins.span), c + (1 if tc.pred == "le" else 0),
                         ins.span)
        new = self._guarded(ins, [first, end, ins.operands[1]], op="check.range")
        ins.block.instrs.remove(ins)
        ins.block = None
        self.put(new)
