"""The collective uniformity verifier (gpu.md "Subgroup collectives"), shared by all backends.

Lattice: WORKGROUP (same for the whole workgroup) < SUBGROUP (same within a subgroup) <
VARYING (per work-item). Kernel arguments, constants, group topology (block, block_dim,
grid_dim) and workgroup allocations (so `&tile[i]` with a uniform i) are workgroup-uniform;
broadcast/reduce/vote results, subgroup_size() and ballot with a uniform word are
subgroup-uniform; local ids, private allocations, memory loads, atomics, scans, shuffles and
opaque call results vary.

Subgroup index (LANGUAGE.md §12.8): `thread.x / D` and `thread.x >> s` are subgroup-uniform
when D is a positive multiple of the subgroup width W (a constant multiple of 32, or
k * subgroup_size()) and s >= 5, through conversions to integers of >= 16 bits (narrower
ones could wrap thread.x negative, where truncating division is not floor).
Proof for a 1-D block: subgroups are formed from consecutive linear thread ids (PTX: warp
w holds ids 32w..32w+31), and in a 1-D block the linear id is thread.x, so subgroup w holds
thread.x in [wW, wW + W) and
floor(thread.x / kW) = floor(w / k) is the same on every lane. With a constant divisor 32k
(W = 32) this also holds for a partial final subgroup, whose ids are a prefix of that
range. subgroup_size() is the live lane count r of the subgroup, so the `/ subgroup_size()`
form needs full subgroups (the block volume a multiple of W): in a partial final
subgroup thread.x / r varies unless r divides wW. In a multi-dimensional block the linear
id is x + X*(y + Y*z); when X is a multiple of W every subgroup lies inside one row, so
thread.x runs over [jW, jW + W) and the same argument holds. A kernel that declares its
block (`kernel(block = ...)`) is held to these conditions (W = 32): where its shape breaks
one, the derivation is not applied; an undeclared launch shape is the caller's
precondition (docs/reference/language_rules.md).

Other axes (LANGUAGE.md §12.8 names thread.x/y/z): `thread.y / 32k`, `thread.z / 32k` (and
`>> s`, s >= 5) with constant divisors. The value of floor(thread.z / 32k) changes only at
linear id X*Y*32k*m, a multiple of 32, and z never wraps, so it is the same across every
aligned run of 32 ids, hence on every subgroup (W = 32, or a W dividing 32). floor(thread.y /
32k) changes at X*32k*m (aligned) and where y wraps to 0 at each new z; that wrap is at a
multiple of 32 when X*Y is, and harmless when Z = 1 (no wrap) or Y <= 32 (the quotient is 0
throughout). A declared block that meets none of these keeps thread.y / 32k varying.

Copies: a local (or an SSA phi) all of whose stores (incoming values) equal thread.x, or
are k * subgroup_size(), is itself such a value, so `var t = thread.x; var w = t / 32;`
derives what `thread.x / 32` does, with or without -O (greatest fixpoint over the stores;
a local is read only after a store, which the frontend enforces).

Control dependence: a block inside the region that a conditional branch controls (reachable
from its successors before the branch's immediate post-dominator) inherits the branch
condition's rank, which also covers loops whose trip count varies. A local written under
control of rank r has at least rank r. Helper parameter ranks and entry control ranks are
joined from every reachable call site. A phi is at least as varying as the control of
each predecessor it merges from, as a local stored there would be (so the SSA form of -O
derives the same ranks as the local slots of a plain build). Errors: E0410 barrier under non-workgroup-uniform
control, E0411 subgroup collective under varying control, E0412 varying broadcast lane,
E0413 tensor operation under control that varies at its scope, E0414 a tensor operand
(pointer, runtime stride, region control or scalar) that varies at its scope.
"""
from __future__ import annotations

from ..diagnostics import DiagnosticBag
from . import ops as O
from .cfg import immediate_postdominators, region_until, reverse_postorder
from .module import Const, Function, Global, Instr, Local, Param

WORKGROUP, SUBGROUP, VARYING = 0, 1, 2
NAMES = {WORKGROUP: "workgroup-uniform", SUBGROUP: "subgroup-uniform", VARYING: "varying"}

_SUBGROUP_RESULTS = ("subgroup.broadcast", "subgroup.reduce", "subgroup.any",
                     "subgroup.all", "subgroup.size")
_VARYING_RESULTS = ("subgroup.local_id", "subgroup.scan", "subgroup.shuffle", "load",
                    "atomic.load", "atomic.rmw", "atomic.cmpxchg", "call", "call_indirect",
                    "local.get", "alloca")


class _FunctionState:
    def __init__(self, fn: Function):
        self.fn = fn
        self.params = {id(p): WORKGROUP for p in fn.params}
        self.entry_ctrl = WORKGROUP
        self.rank: dict[int, int] = {}
        self.locals: dict[int, int] = {id(l): WORKGROUP for l in fn.locals}
        self.ctrl: dict[int, int] = {}
        # values equal to thread.x / .y / .z (modulo conversion), by axis
        self.lane: dict[str, set[int]] = {"x": set(), "y": set(), "z": set()}
        self.lane_x = self.lane["x"]
        self.width: set[int] = set()      # values k * subgroup_size(), k a positive const
        shape = fn.block_shape
        # which subgroup-index derivations this kernel's declared block keeps sound
        # (module docstring; an undeclared block is the launch's precondition)
        self.x_rows_ok = shape is None or shape[1] * shape[2] == 1 or shape[0] % 32 == 0
        self.full_ok = self.x_rows_ok and (shape is None or
                                           shape[0] * shape[1] * shape[2] % 32 == 0)
        # thread.y / 32k and thread.z / 32k ("Other axes" in the module docstring)
        self.axis_ok = {"y": shape is None or shape[2] == 1 or shape[1] <= 32 or
                        shape[0] * shape[1] % 32 == 0, "z": True}
        self.order = reverse_postorder(fn)
        self.ipdom = immediate_postdominators(fn)
        self.swept = False                # lane_x and width are complete after one sweep
        self.applied: dict[int, int] = {}   # cbr block -> the rank spread over its region
        self.calls: list | None = None      # (block, call) of the program's callees
        _seed_copies(self)


def _value_rank(st: _FunctionState, v) -> int:
    if v.__class__ is Instr:                    # (most operands: one test)
        return st.rank.get(id(v), WORKGROUP)
    if isinstance(v, (Const, Global, Function)):
        return WORKGROUP
    if isinstance(v, Param):
        return st.params.get(id(v), VARYING)
    if isinstance(v, Local):
        return st.locals.get(id(v), VARYING)
    if isinstance(v, Instr):
        return st.rank.get(id(v), WORKGROUP)
    return VARYING


def _seed_copies(st: _FunctionState) -> None:
    """Put into lane_x / width the local.get and phi results that copy such values
    (module docstring, "Copies"). Greatest fixpoint: start from every stored-to local and
    every phi, drop those with an incoming value that is not of the kind, until stable."""
    stores: dict[int, list] = {}
    gets: dict[int, list] = {}
    phis: list[Instr] = []
    for blk in st.order:
        for ins in blk.instrs:
            if ins.op == "local.set":
                stores.setdefault(id(ins.operands[0]), []).append(ins.operands[1])
            elif ins.op == "local.get":
                gets.setdefault(id(ins.operands[0]), []).append(ins)
            elif ins.op == "phi":
                phis.append(ins)
    kinds = [(_lane_of(axis), st.lane[axis]) for axis in "xyz"] + [(_is_width, st.width)]
    for kind, into in kinds:
        locs, ph = set(stores), {id(p) for p in phis}
        changed = True
        while changed:
            changed = False
            for loc, vals in stores.items():
                if loc in locs and not all(kind(v, locs, ph) for v in vals):
                    locs.discard(loc)
                    changed = True
            for p in phis:
                if id(p) in ph and not (p.operands and
                                        all(kind(v, locs, ph) for v in p.operands)):
                    ph.discard(id(p))
                    changed = True
        into.update(id(g) for loc in locs for g in gets.get(loc, ()))
        into.update(ph)


def _lane_of(axis: str):
    def is_lane(v, locs: set, phis: set) -> bool:
        """`v` equals thread.<axis>, given the locals/phis still assumed to."""
        while v.__class__ is Instr and v.op == "convert" and _keeps_value(v):
            v = v.operands[0]
        if v.__class__ is not Instr:
            return False
        if v.op == "gpu.index":
            return v.attrs["kind"] == "thread" and v.attrs["axis"] == axis
        if v.op == "local.get":
            return id(v.operands[0]) in locs
        return v.op == "phi" and id(v) in phis
    return is_lane


def _is_width(v, locs: set, phis: set) -> bool:
    """`v` is a positive constant multiple of subgroup_size() (as _track_width)."""
    if v.__class__ is not Instr:
        return False
    op, ops = v.op, v.operands
    if op == "subgroup.size":
        return True
    if op == "convert":
        return _keeps_value(v) and _is_width(ops[0], locs, phis)
    if op == "local.get":
        return id(ops[0]) in locs
    if op == "phi":
        return id(v) in phis
    if not (v.type.is_int and v.type.bits >= 32):
        return False
    if op == "mul":
        return any(_is_width(o, locs, phis) for o in ops) and \
            any(_positive_const(o) and o.value < 1 << 16 for o in ops)
    return op == "shl" and _is_width(ops[0], locs, phis) and isinstance(ops[1], Const) \
        and isinstance(ops[1].value, int) and 0 <= ops[1].value < 16


def _positive_const(v) -> bool:
    return isinstance(v, Const) and isinstance(v.value, int) and \
        not isinstance(v.value, bool) and v.value > 0


def _is_warp_divisor(st: _FunctionState, v, op: str) -> bool:
    if op == "div" and isinstance(v, Instr) and id(v) in st.width:
        return st.full_ok
    if not _positive_const(v) or not st.x_rows_ok:
        return False
    return v.value % 32 == 0 if op == "div" else v.value >= 5


def _is_row_divisor(v, op: str) -> bool:
    """A constant `/ 32k` or `>> s` (s >= 5): the thread.y/z forms (constants only)."""
    if not _positive_const(v):
        return False
    return v.value % 32 == 0 if op == "div" else v.value >= 5


def _keeps_value(ins: Instr) -> bool:
    """A conversion that keeps every thread.x / subgroup-width value (< 2^11, non-negative)
    unchanged: to an integer of at least 16 bits. A narrower (e.g. signed 8-bit) type
    could wrap to negatives, where truncating division breaks the floor argument."""
    return ins.type.is_int and ins.type.bits >= 16


def _track_width(st: _FunctionState, ins: Instr) -> None:
    """Record `ins` when it is a positive constant multiple of subgroup_size()."""
    op, ops = ins.op, ins.operands
    if op == "subgroup.size" or (op == "convert" and id(ops[0]) in st.width and
                                 _keeps_value(ins)):
        st.width.add(id(ins))
    elif not (ins.type.is_int and ins.type.bits >= 32):
        return                            # a narrow product could wrap
    elif op == "mul" and any(isinstance(o, Instr) and id(o) in st.width for o in ops) \
            and any(_positive_const(o) and o.value < 1 << 16 for o in ops):
        st.width.add(id(ins))
    elif op == "shl" and isinstance(ops[0], Instr) and id(ops[0]) in st.width and \
            isinstance(ops[1], Const) and isinstance(ops[1].value, int) and \
            0 <= ops[1].value < 16:
        st.width.add(id(ins))


def _instr_rank(st: _FunctionState, ins: Instr, first: bool = True) -> int:
    """`first`: the first sweep, which finds the thread.x and subgroup-width values (they
    follow from operands that dominate, so from values the RPO sweep has already seen:
    later sweeps would find the same sets)."""
    op = ins.op
    if first:
        _track_width(st, ins)
    if op == "gpu.alloc":
        return WORKGROUP if ins.attrs.get("space") == "workgroup" else VARYING
    if op == "gpu.index":
        if ins.attrs["kind"] == "thread":
            if first and ins.attrs["axis"] in st.lane:
                st.lane[ins.attrs["axis"]].add(id(ins))
            return VARYING
        return WORKGROUP
    if op == "convert" and _keeps_value(ins):
        for lane in st.lane.values():
            if id(ins.operands[0]) in lane:
                lane.add(id(ins))
                return VARYING
    if op in ("div", "shr"):
        a = id(ins.operands[0])
        if a in st.lane_x and _is_warp_divisor(st, ins.operands[1], op):
            return SUBGROUP
        for axis in ("y", "z"):
            if a in st.lane[axis] and st.axis_ok[axis] and \
                    _is_row_divisor(ins.operands[1], op):
                return SUBGROUP
    if op == "local.get":
        return st.locals[id(ins.operands[0])]
    if op == "phi":                       # merged under its predecessors' control
        r = st.entry_ctrl
        for b in ins.targets:
            r = max(r, st.ctrl.get(id(b), WORKGROUP))
        for o in ins.operands:
            r = max(r, _value_rank(st, o))
        return r
    if op == "subgroup.ballot":
        return max(SUBGROUP, _value_rank(st, ins.operands[1]))
    if op in _SUBGROUP_RESULTS:
        return SUBGROUP
    if op in _VARYING_RESULTS or op.startswith("atomic."):
        return VARYING
    r = WORKGROUP                           # the join of the operands (a loop: no generator)
    for o in ins.operands:
        v = st.rank.get(id(o), WORKGROUP) if o.__class__ is Instr else _value_rank(st, o)
        if v > r:
            r = v
    return r


def _sweep(st: _FunctionState) -> bool:
    """One pass over the function; True when any rank rose."""
    changed = False
    first = not st.swept
    st.swept = True
    rank = st.rank
    for blk in st.order:
        c = max(st.ctrl.get(id(blk), WORKGROUP), st.entry_ctrl)
        for ins in blk.instrs:
            cur = rank.get(id(ins), WORKGROUP)
            if first or cur != VARYING:         # (nothing raises the top rank again)
                r = _instr_rank(st, ins, first)
                if r > cur:
                    rank[id(ins)] = r
                    changed = True
            if ins.op == "local.set":
                loc = id(ins.operands[0])
                new = max(st.locals[loc], _value_rank(st, ins.operands[1]), c)
                if new > st.locals[loc]:
                    st.locals[loc] = new
                    changed = True
        term = blk.terminator
        if term is not None and term.op == "cbr":
            r = max(_value_rank(st, term.operands[0]), c)
            if r > st.applied.get(id(blk), WORKGROUP):    # (the region is fixed: a rank
                st.applied[id(blk)] = r                   # already spread there, stays)
                for b in region_until(term.targets, st.ipdom[id(blk)]):
                    if r > st.ctrl.get(id(b), WORKGROUP):
                        st.ctrl[id(b)] = r
                        changed = True
    return changed


def _propagate_calls(states: dict[str, _FunctionState]) -> set[str]:
    """Join every call site's control and argument ranks into its callee; returns the
    names of the callees that rose."""
    raised: set[str] = set()
    for st in states.values():
        if st.calls is None:                    # found once: the IR does not change
            st.calls = [(blk, ins) for blk in st.order for ins in blk.instrs
                        if ins.op == "call" and ins.operands[0].name in states]
        for blk, ins in st.calls:
            c = max(st.ctrl.get(id(blk), WORKGROUP), st.entry_ctrl)
            callee = states[ins.operands[0].name]
            if c > callee.entry_ctrl:
                callee.entry_ctrl = c
                raised.add(callee.fn.name)
            for p, a in zip(callee.fn.params, ins.operands[1:]):
                r = _value_rank(st, a)
                if r > callee.params[id(p)]:
                    callee.params[id(p)] = r
                    raised.add(callee.fn.name)
    return raised


def _check(st: _FunctionState, bag: DiagnosticBag) -> None:
    for blk in st.order:
        c = max(st.ctrl.get(id(blk), WORKGROUP), st.entry_ctrl)
        for ins in blk.instrs:
            scope = O.OPS[ins.op].collective
            if ins.op.startswith("tensor."):
                _check_tensor(st, ins, c, bag)
            elif ins.op == "tile.uniform":
                _check_tile(st, ins, c, bag)
            elif scope == "workgroup" and c > WORKGROUP:
                bag.error("E0410", f"barrier in `{st.fn.name}` is reached under {NAMES[c]} "
                          "control flow; every work-item of the workgroup must reach it",
                          ins.span, help="move the barrier out of the divergent branch/loop")
            elif scope == "subgroup" and c > SUBGROUP:
                bag.error("E0411", f"subgroup collective {ins.op} in `{st.fn.name}` is "
                          "reached under varying control flow", ins.span,
                          help="collectives must be executed by every lane of the subgroup")
            if ins.op == "subgroup.broadcast" and _value_rank(st, ins.operands[1]) > SUBGROUP:
                bag.error("E0412", "the broadcast source lane varies across the subgroup",
                          ins.span, help="use a lane index that is uniform in the subgroup")


def _check_tensor(st: _FunctionState, ins: Instr, c: int, bag: DiagnosticBag) -> None:
    """Tensor operations are collective at their descriptor's scope (subgroup or
    workgroup): reached under control of at most that rank, with every operand (pointers,
    runtime strides, region controls, scalars) uniform at that rank. E0413 / E0414."""
    scope = getattr(ins.attrs.get("desc"), "scope", "subgroup")
    limit = WORKGROUP if scope == "workgroup" else SUBGROUP
    what = ins.op.replace(".", "_")
    if c > limit:
        bag.error("E0413", f"{what} has {scope} scope but is reached under {NAMES[c]} "
                  f"control flow in `{st.fn.name}`", ins.span,
                  help=f"every work-item of the {scope} must execute it together")
    for role, v in zip(ins.attrs.get("roles", ()), ins.operands):
        r = _value_rank(st, v)
        if r > limit:
            bag.error("E0414", f"{what} operand `{role}` is {NAMES[r]}; it must be uniform "
                      f"across the {scope}", ins.span,
                      help="pass the same pointer/stride/control value from every work-item")


def _check_tile(st: _FunctionState, ins: Instr, c: int, bag: DiagnosticBag) -> None:
    """A tile operation (marked by tile.uniform, docs/reference/tiles.md "Uniformity") is a
    workgroup collective: workgroup-uniform control and operands. E0413 / E0414."""
    what = ins.attrs["what"]
    if c > WORKGROUP:
        bag.error("E0413", f"{what} has workgroup scope but is reached under {NAMES[c]} "
                  f"control flow in `{st.fn.name}`", ins.span,
                  help="every work-item of the workgroup must execute it together")
    for role, v in zip(ins.attrs.get("roles", ()), ins.operands):
        r = _value_rank(st, v)
        if r > WORKGROUP:
            bag.error("E0414", f"{what} operand `{role}` is {NAMES[r]}; it must be uniform "
                      "across the workgroup", ins.span,
                      help="pass the same value from every work-item of the workgroup")


def verify_uniformity(functions: list[Function]) -> None:
    """Check every collective of the device program (kernels plus reachable helpers)."""
    if not any(O.OPS[i.op].collective for f in functions for i in f.instructions()):
        return                        # errors are only ever reported at collectives
    states = {f.name: _FunctionState(f) for f in functions}
    for st in states.values():
        if not st.fn.is_kernel:
            st.params = {id(p): WORKGROUP for p in st.fn.params}
    # To the fixpoint. A function whose last sweep changed nothing is swept again only when
    # a call raised its parameters or entry control (its only inputs from outside).
    dirty = set(states)
    changed = True
    while changed:
        changed = False
        for name, st in states.items():
            if name in dirty:
                if _sweep(st):
                    changed = True
                else:
                    dirty.discard(name)
        raised = _propagate_calls(states)
        if raised:
            dirty |= raised
            changed = True
    bag = DiagnosticBag()
    for st in states.values():
        _check(st, bag)
    bag.raise_if_errors()
