"""Alignment and no-alias facts about pointer values (the `pointers` analysis).

Passes ask these through `analyses.get("pointers")` instead of reasoning locally:
- `align(p)`: a power of two that p's address is known to be a multiple of;
- `disjoint(p, psize, q, qsize)`: the `psize` bytes at p and the `qsize` bytes at q never
  overlap (wherever both are evaluated in one straight-line stretch, or anywhere when
  their addresses are loop-invariant: equal SSA values name equal numbers);
- `parts(p)`: p as base object + the dynamic terms (value, scale) + a constant byte offset.

Where the facts come from (the IR's promises, docs/internals/optimizer.md "Pointer facts"):
- a typed pointer is naturally aligned for its pointee (LANGUAGE.md: natural alignment;
  the language has no way to form a misaligned typed pointer except through integer casts,
  whose results it does not define);
- `gpu.alloc` storage is at least 16-byte aligned on every target (PTX: workgroup arrays
  .align >= 32, private .local arrays >= 16; SPIR-V: the variable's Alignment decoration);
- address arithmetic keeps a known multiple: `ptradd p, i` adds size*i, whose alignment is
  size times the power of two known to divide i (constants, `mul`/`shl` by constants,
  `add`/`sub`/`and`, widening converts);
- distinct objects do not overlap: two named address spaces other than `generic`, two
  different `gpu.alloc`s / `alloca`s / globals / the dynamic workgroup arena (every
  `gpu.dynamic_shared` view starts at that one arena), the results of two different calls
  of the C allocators (malloc, calloc: fresh storage, as C promises; seen through the
  pointer cast the source writes, address arithmetic and pointer phis), and (inside a
  kernel) a parameter
  against storage the kernel allocates itself; one object's accesses at constant offsets with the
  same dynamic part are compared byte by byte.
"""
from __future__ import annotations

from ..ir.module import Const, Global, Instr, Param
from ..ir.types import StructType

BIG = 1 << 30                     # "any power of two": the multiple of a zero offset
ALLOC_ALIGN = 16                  # every target's minimum for gpu.alloc storage
_ADDR = ("ptradd", "byteadd", "fieldptr", "addrspacecast")
_OBJECTS = ("gpu.alloc", "alloca", "gpu.dynamic_shared")   # the last: the launch's arena


def low_bit(n: int) -> int:
    """The largest power of two dividing n (BIG for 0)."""
    n &= (1 << 64) - 1
    return min(n & -n, BIG) if n else BIG


class PointerFacts:
    def __init__(self, fn):
        self.fn = fn
        self._parts: dict = {}
        self._bases: dict = {}                  # _base()
        self._mult: dict = {}

    # ---- decomposition ---------------------------------------------------------------
    def parts(self, p) -> tuple:
        """(base, terms, offset): p = base + sum(value * scale for terms) + offset bytes.
        `terms` is a sorted tuple of (value, scale) keyed by value identity."""
        got = self._parts.get(p)
        if got is not None:
            return got
        terms: dict = {}
        offset = 0
        v = p
        while isinstance(v, Instr) and v.op in _ADDR:
            base = v.operands[0]
            if v.op == "fieldptr":
                st = base.type.pointee
                if not isinstance(st, StructType):
                    break
                offset += st.offsets[v.attrs["index"]]
            elif v.op in ("ptradd", "byteadd"):
                idx = v.operands[1]
                scale = max(base.type.pointee.size, 1) if v.op == "ptradd" else 1
                if isinstance(idx, Const):
                    offset += int(idx.value) * scale
                else:
                    term, k = self._index(idx)
                    offset += k * scale
                    terms[term] = terms.get(term, 0) + scale
            v = base
        key = tuple(sorted(((t, s) for t, s in terms.items() if s), key=_term_order))
        got = self._parts[p] = (v, key, offset)
        return got

    def _index(self, idx) -> tuple:
        """(term, k): the i64 index is term + k exactly. A widened `x + k` (the `a[i + 1]`
        of source code) counts as widen(x) + k when x is a multiple of a power of two
        above k >= 0: then x + k cannot wrap (the type's maximum is one below a multiple
        of that power), so widening the sum adds k to the widened x."""
        if isinstance(idx, Instr) and idx.op == "add" and isinstance(idx.operands[1], Const):
            term, k = self._index(idx.operands[0])       # i64 arithmetic: exact mod 2**64
            return term, k + int(idx.operands[1].value)
        if isinstance(idx, Instr) and idx.op == "convert" and idx.operands[0].type.is_int:
            x = idx.operands[0]
            if x.type.bits >= idx.type.bits:
                return idx, 0
            if isinstance(x, Instr) and x.op == "add" and isinstance(x.operands[1], Const):
                k = int(x.operands[1].value)
                if 0 <= k < self.multiple(x.operands[0]):
                    return ("widen", x.operands[0]), k
            return ("widen", x), 0
        return idx, 0

    # ---- alignment -------------------------------------------------------------------
    def align(self, p) -> int:
        a = min(self.run_align(p), low_bit(self.parts(p)[2]))
        return max(a, _natural(p))

    def run_align(self, p) -> int:
        """The alignment of p's base plus dynamic part, before its constant offset: the
        most any address of the same base and dynamic part can be shown to have."""
        base, terms, _ = self.parts(p)
        a = self._base_align(base)
        for value, scale in terms:
            a = min(a, low_bit(scale) * self.multiple(value))
        return a

    def _base_align(self, base) -> int:
        if isinstance(base, Instr) and base.op == "gpu.alloc":
            return max(ALLOC_ALIGN, base.attrs["elem"].align)
        if isinstance(base, Instr) and base.op == "alloca":
            return max(base.attrs["type"].align, 1)
        if isinstance(base, Global):
            return max(base.value_type.align, 1)
        return _natural(base)

    def multiple(self, v) -> int:
        """A power of two known to divide integer value v (1 when nothing is known)."""
        if isinstance(v, tuple):                # ("widen", x): x widened keeps its zeros
            return min(self.multiple(v[1]), 1 << (v[1].type.bits - 1))
        if isinstance(v, Const):
            return low_bit(int(v.value)) if isinstance(v.value, int) else 1
        if not isinstance(v, Instr):
            return 1
        got = self._mult.get(v)
        if got is None:
            self._mult[v] = 1                   # a cycle through phis knows nothing
            got = self._mult[v] = self._multiple(v)
        return got

    def _multiple(self, v: Instr) -> int:
        op, ops = v.op, v.operands
        if op == "mul":
            return min(self.multiple(ops[0]) * self.multiple(ops[1]), BIG)
        if op == "shl" and isinstance(ops[1], Const) and 0 <= int(ops[1].value) < v.type.bits:
            return min(self.multiple(ops[0]) << int(ops[1].value), BIG)
        if op in ("add", "sub", "min", "max", "select", "phi"):
            vals = ops[1:] if op == "select" else ops
            return min(self.multiple(o) for o in vals) if vals else 1
        if op == "and":
            return max(self.multiple(ops[0]), self.multiple(ops[1]))
        if op == "convert" and ops[0].type.is_int and v.type.is_int \
                and v.type.bits >= ops[0].type.bits:
            return min(self.multiple(ops[0]), 1 << (ops[0].type.bits - 1))
        return 1

    # ---- aliasing --------------------------------------------------------------------
    def disjoint(self, p, psize: int, q, qsize: int) -> bool:
        sp, sq = _space(p), _space(q)
        if sp and sq and sp != sq and "generic" not in (sp, sq):
            return True
        bp, bq = self._base(p), self._base(q)
        if bp is None or bq is None or bp is bq or _same_arena(bp, bq):
            bp, tp, op = self.parts(p)
            bq, tq, oq = self.parts(q)
            if bp is bq or _same_arena(bp, bq):
                return tp == tq and (op + psize <= oq or oq + qsize <= op)
        return self._distinct_objects(bp, bq)

    def _base(self, p):
        """parts(p)[0], the base object, without the dynamic terms (compile time: distinct
        bases need no terms). None when parts() would ask multiple() on the way: its memo
        depends on the order of questions around a phi cycle, so parts() is asked then."""
        got = self._parts.get(p)
        if got is not None:
            return got[0]
        got = self._bases.get(p, _UNSEEN)       # (a base may be None)
        if got is not _UNSEEN:
            return got
        v = p
        while isinstance(v, Instr) and v.op in _ADDR:
            base = v.operands[0]
            if v.op == "fieldptr":
                if not isinstance(base.type.pointee, StructType):
                    break
            elif v.op != "addrspacecast" and _asks_multiple(v.operands[1]):
                v = None
                break
            v = base
        self._bases[p] = v
        return v

    def _distinct_objects(self, a, b) -> bool:
        ka, kb = _object_kind(a), _object_kind(b)
        if ka and kb:
            return True                         # two different allocations or globals
        ra, rb = _allocated(a), _allocated(b)
        if (ra is not None or rb is not None) and ra is not rb and \
                (ra is not None or ka) and (rb is not None or kb):
            return True                         # malloc'd storage against another object
        if self.fn.is_kernel:                   # host-given pointers never reach storage
            local = _OBJECTS                    # the kernel allocates itself
            return (ka in local and isinstance(b, Param)) or \
                (kb in local and isinstance(a, Param))
        return False


_UNSEEN = object()


def _asks_multiple(idx) -> bool:
    """Whether PointerFacts._index(idx) asks multiple(): for a widened `x + k`."""
    while isinstance(idx, Instr) and idx.op == "add" and isinstance(idx.operands[1], Const):
        idx = idx.operands[0]
    if isinstance(idx, Instr) and idx.op == "convert" and idx.operands[0].type.is_int:
        x = idx.operands[0]
        return x.type.bits < idx.type.bits and isinstance(x, Instr) and x.op == "add" and \
            isinstance(x.operands[1], Const)
    return False


def _term_order(term_scale) -> int:
    t = term_scale[0]
    return id(t[1]) if isinstance(t, tuple) else id(t)


def _natural(p) -> int:
    """A typed pointer's own promise: its pointee's natural alignment."""
    return max(getattr(getattr(p.type, "pointee", None), "align", 1), 1)


def _space(p) -> str | None:
    t = getattr(p, "type", None)
    return getattr(t, "space", None)


def _object_kind(v) -> str | None:
    if isinstance(v, Global):
        return "global"
    if isinstance(v, Instr) and v.op in _OBJECTS:
        return v.op
    return None


_ALLOCATORS = ("malloc", "calloc")


def _allocated(v, seen=None):
    """The C allocator call whose storage `v` points into, else None: through pointer
    casts, address arithmetic (which stays in its object, as for every object here) and
    phis whose every arm leads to that one call (a pointer induction variable)."""
    while isinstance(v, Instr) and (v.op in ("ptradd", "byteadd") or
                                    v.op == "bitcast" and v.operands[0].type.is_ptr):
        v = v.operands[0]
    if not isinstance(v, Instr):
        return None
    if v.op == "call":
        f = v.operands[0]
        return v if getattr(f, "is_extern", False) and f.symbol in _ALLOCATORS else None
    if v.op != "phi":
        return None
    seen = set() if seen is None else seen
    if v in seen:
        return _CYCLE                         # the arm coming back round the loop
    seen.add(v)
    found = None
    for o in v.operands:
        got = _allocated(o, seen)
        if got is None or (got is not _CYCLE and found is not None and got is not found):
            return None
        if got is not _CYCLE:
            found = got
    return found


_CYCLE = object()


def _same_arena(a, b) -> bool:
    """Every gpu.dynamic_shared view starts at the same launch-sized arena."""
    return isinstance(a, Instr) and isinstance(b, Instr) and \
        a.op == b.op == "gpu.dynamic_shared"
