"""Private slots (`alloca`) kept in registers instead of `.local` memory.

A struct local, a by-value parameter's spill or a tagged enum value is an `alloca` that the
program reaches only through constant-offset addresses (`fieldptr`, constant
`ptradd`/`byteadd`, pointer `bitcast`) feeding loads and stores. ptxas promotes such arrays
to registers itself only in simple cases (fields of mixed widths or bytes defeat it), so the
back end does it: every access covers a set of scalar pieces (lower_aggregate.chunks), and
when the pieces of all accesses to one slot are either identical or disjoint, each piece
becomes one register (by size: %rd, %r, %rs) and the slot, its addresses, loads and stores
become moves (a load-combined `vec<N x T>` access covers N pieces). Pieces that overlap (a
tagged enum's payload written as float32 and read as int64, or copied whole) share one
64-bit register when together they span at most 8 bytes, as naturally aligned pieces of
at most 8 bytes always do: a narrower piece is a bit field of it (`bfe` to read, `bfi` to
write), little-endian, which is what the bytes of memory would give. A slot whose address
escapes (a call, a store of the address, an integer cast, a memcpy, a variable offset),
or whose overlapping pieces span more than 8 bytes, stays in memory.
"""
from __future__ import annotations

from ...ir.module import Const, Instr, Undef, UseMap
from ...ir.types import BoolType, FloatType, IntType, Type
from . import ops
from .instr import Vec

_ADDRESS = ("fieldptr", "ptradd", "byteadd", "bitcast")


def _offset(ins: Instr) -> int | None:
    """The constant byte offset `ins` adds to its address operand, None if not constant."""
    if ins.op == "fieldptr":
        return ins.operands[0].type.pointee.offsets[ins.attrs["index"]]
    if ins.op in ("ptradd", "byteadd") and isinstance(ins.operands[1], Const):
        scale = max(ins.type.pointee.size, 1) if ins.op == "ptradd" else 1
        return int(ins.operands[1].value) * scale
    if ins.op == "bitcast" and ins.type.is_ptr:
        return 0
    return None


def pieces(t: Type, base: int) -> list[tuple[int, int]] | None:
    from .lower_aggregate import chunks
    if t.is_aggregate:
        return chunks(t, base)
    if t.is_vector:                             # load-combine's vec<N x T> view
        return [(base + i * t.elem.size, t.elem.size) for i in range(t.count)]
    if isinstance(t, (IntType, FloatType, BoolType)) or t.is_ptr:
        return [(base, t.size)]
    return None                                 # vectors and the rest: memory


class Slots:
    """The promoted slots of one function: `absorbed` (the allocas and their addresses,
    which emit nothing) and `access` (load/store -> (slot id, byte offset))."""

    def __init__(self, fn, uses: UseMap):
        self.absorbed: set[Instr] = set()
        self.access: dict[Instr, tuple[int, int]] = {}
        self.regs: dict[int, dict[int, tuple[int, str | None]]] = {}   # slot -> off -> unit
        # slot -> piece (offset, size) -> (its unit's offset, bit position; None: the unit)
        self.within: dict[int, dict[tuple[int, int], tuple[int, int | None]]] = {}
        for b in fn.blocks:
            for ins in b.instrs:
                if ins.op == "alloca":
                    self._try(ins, uses)

    def _try(self, alloca: Instr, uses: UseMap) -> None:
        addresses, access, covered = [alloca], {}, set()
        work = [(alloca, 0)]
        while work:
            p, off = work.pop()
            for u in uses.uses(p):
                if u.op in _ADDRESS and u.operands[0] is p and _offset(u) is not None \
                        and u.type.is_ptr:
                    addresses.append(u)
                    work.append((u, off + _offset(u)))
                    continue
                if u.op == "load" and u.operands[0] is p:
                    t = u.type
                elif u.op == "store" and u.operands[0] is p and u.operands[1] is not p:
                    t = u.operands[1].type
                else:
                    return                      # the address escapes
                got = pieces(t, off)
                if got is None:
                    return
                covered.update(got)
                access[u] = off
        units = _units(covered)
        if units is None:
            return                              # overlapping pieces that share no word
        key = id(alloca)
        self.regs[key] = {start: (size, None) for start, size in units.items()}
        self.within[key] = {p: _home(p, units) for p in covered}
        self.absorbed.update(addresses)
        self.access.update((u, (key, off)) for u, off in access.items())

    def _unit(self, em, key: int, start: int) -> str:
        """The register of the unit at `start` (made on first use)."""
        slot = self.regs[key]
        size, r = slot[start]
        if r is None:
            r = em.new(_CLASS[size])
            slot[start] = (size, r)
        return r

    def read(self, em, key: int, off: int, size: int) -> str:
        """A register of the piece's class holding the piece at `off`."""
        start, pos = self.within[key][(off, size)]
        r = self._unit(em, key, start)
        if pos is None:
            return r
        t, n = em.new("rd"), em.new(_CLASS[size])
        em.append(ops.bfe("u64", t, r, pos, 8 * size))
        em.append(ops.cvt(_UINT[size], "u64", n, t))
        return n

    def write(self, em, key: int, off: int, size: int, put) -> None:
        """Set the piece at `off` to what `put(register)` writes into a register of its
        class."""
        start, pos = self.within[key][(off, size)]
        r = self._unit(em, key, start)
        if pos is None:
            put(r)
            return
        n, t = em.new(_CLASS[size]), em.new("rd")
        put(n)
        em.append(ops.cvt("u64", _UINT[size], t, n))
        em.append(ops.bfi("b64", r, t, r, pos, 8 * size))


def _units(pieces: set) -> dict[int, int] | None:
    """The registers of a slot accessed as `pieces` ((offset, size) pairs): offset -> size.
    A piece that overlaps no other is its own unit; overlapping ones share one 64-bit
    unit from their first byte when they span at most 8 bytes, else there is no register
    form (None)."""
    units: dict[int, int] = {}
    for run, end in _overlapping(sorted(pieces)):
        start = run[0][0]
        if len(run) == 1:
            units[start] = run[0][1]
        elif end - start <= 8 and all(z in _CLASS for _, z in run):
            units[start] = 8
        else:
            return None
    return units


def _overlapping(pieces: list):
    """The maximal runs of sorted, distinct pieces that overlap one another (directly or
    through others), each with its end offset."""
    run, end = [], 0
    for o, z in pieces:
        if run and o >= end:
            yield run, end
            run, end = [], 0
        run.append((o, z))
        end = max(end, o + z)
    if run:
        yield run, end


def _home(piece: tuple[int, int], units: dict[int, int]) -> tuple[int, int | None]:
    """(the offset of the unit holding `piece`, its bit position there; None when the
    piece is the unit)."""
    o, z = piece
    if units.get(o) == z:
        return o, None
    start = max(u for u in units if u <= o)
    return start, 8 * (o - start)


_CLASS = {8: "rd", 4: "r", 2: "rs", 1: "rs"}
_UINT = {4: "u32", 2: "u16", 1: "u16"}
_MOV = {8: "b64", 4: "b32", 2: "b16", 1: "b16"}


def load(em, ins: Instr) -> None:
    """A load from a promoted slot: moves out of its piece registers."""
    from .lower_aggregate import chunks, new_value
    slots = em.slots
    key, off = slots.access[ins]
    t = ins.type
    if t.is_aggregate:
        out = new_value(em, t)
        for d, (o, size) in zip(out, chunks(t, off)):
            em.append(ops.mov(_MOV[size], d, slots.read(em, key, o, size)))
        em.define(ins, out)
        return
    if t.is_vector:
        out = [em.new_t(t.elem) for _ in range(t.count)]
        for i, d in enumerate(out):
            size = t.elem.size
            em.append(ops.mov(_MOV[size], d, slots.read(em, key, off + i * size, size)))
        em.define(ins, Vec(out))
        return
    r = slots.read(em, key, off, t.size)
    d = em.result(ins)
    if isinstance(t, BoolType):
        em.append(ops.setp("ne", "u16", d, r, 0))
    elif isinstance(t, IntType) and t.bits == 8:       # renormalize (regs.py's invariant)
        s = "s" if t.signed else "u"
        em.append(ops.cvt(f"{s}16", f"{s}8", d, r))
    else:
        em.append(ops.mov(_MOV[t.size], d, r))


def store(em, ins: Instr) -> None:
    """A store to a promoted slot: moves into its piece registers."""
    from .lower_aggregate import chunks, value
    slots = em.slots
    key, off = slots.access[ins]
    v = ins.operands[1]
    t = v.type
    if isinstance(v, Undef):
        return
    if t.is_aggregate:
        for s, (o, size) in zip(value(em, v), chunks(t, off)):
            slots.write(em, key, o, size,
                        lambda r, s=s, size=size: em.append(ops.mov(_MOV[size], r, s)))
        return
    if t.is_vector:
        from .lower_memory import _vector
        size = t.elem.size
        for i, s in enumerate(_vector(em, v).regs):
            slots.write(em, key, off + i * size, size,
                        lambda r, s=s: em.append(ops.mov(_MOV[size], r, s)))
        return
    if isinstance(t, BoolType):
        slots.write(em, key, off, 1, lambda r: em.append(ops.selp("u16", r, 1, 0, em.reg(v))))
    else:
        slots.write(em, key, off, t.size,
                    lambda r: em.append(ops.mov(_MOV[t.size], r, em.val(v))))
