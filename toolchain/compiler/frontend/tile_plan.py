"""Layout assignment for the register-resident tile lowering (docs/internals/tile-frag.md).

Before a kernel with tile values is lowered, one walk over its body decides where every
tile variable lives when the target has the m16n8k16 warp MMA (the `tile_mma` flag):

- a 16-bit tile variable used only as the b operand of `tensor_matmul` and assigned only
  by `tile_load` is a *shared tile*: workgroup memory, filled by cooperative 16-byte copies,
  read by `ldmatrix`;
- every other 2-D tile is a *fragment tile*: registers in the m16n8 accumulator layout
  (16-bit tiles as the packed pairs that are also the A fragment);
- an R x 1 vector is a *row vector*: each thread holds the values of its own rows.

The plan is all or nothing per kernel: anything the fragment form does not cover (a
1 x C vector, a column reduction, a b operand that is not such a variable, a row count
that is not a multiple of 16 per warp, more shared memory or registers than the budgets)
keeps the whole kernel on the replay (tile_replay.py, tile_mma.py), and `why` says what.

With `tile_wgmma` (sm_90a, --gpu-tile-wgmma=on) a fragment plan whose every matmul has
the wgmma form (_wgmma_why) takes it (tile_wgmma.py, docs/internals/tile-wgmma.md): the
same registers, the shared tiles in a swizzled wgmma layout instead of padded rows; else
it keeps mma.sync and `wgmma_why` says why. With --gpu-tile-wgmma-a=shared it also keeps
each A tile that only `tile_load` assigns in workgroup memory (_a_in_shared), so wgmma
reads both operands through descriptors, as FlashAttention-3 reads Q.

Shared tiles are static arrays within 48 KiB. A kernel whose padded tiles do not fit
that (it would replay) may still take the wgmma form with its swizzled tiles, up to
sm_90's 227 KiB, in the kernel's dynamic workgroup memory at fixed offsets (`offsets`,
`dynamic`): the kernel traps when a launch gives less, and the signature tells launchers
how much to give (`shared_bytes`). A kernel with a `workgroup var` view of its own keeps
the 48 KiB limit (the view and the tiles would share one base), and so does a kernel
that fits without dynamic memory: a launch that worked keeps working.
"""
from __future__ import annotations

from . import ast as A

SHARED_BYTES = 48 * 1024        # static workgroup memory every PTX profile has
DYNAMIC_BYTES = 227 * 1024      # sm_90's opt-in maximum per workgroup (every wgmma target)
REGISTER_BUDGET = 255           # fragment registers of the tile variables live at once
#                                 (an estimate: _peak_registers)
PAD = 8                         # 16-bit elements appended to each shared row (16 bytes)
SWIZZLE_ALIGN = 1024            # base alignment of a swizzled shared tile: the 128-byte
#                                 swizzle's 8 x 128-byte pattern (descriptor base offset 0)


class SharedSpec:
    """A shared tile variable: `col` when its loads read the tile column-major (then its
    columns are contiguous in workgroup memory, else its rows); `swizzle`: in the wgmma
    form, the bytes of one swizzled row (128, 64 or 32), else 0 (padded rows)."""

    def __init__(self, col: bool, inner: int = 0):
        self.col = col
        self.inner = inner              # elements along the contiguous dimension
        self.swizzle = 0


class TilePlan:
    def __init__(self, why: str | None, shared=None, warps: int = 0, waits=None):
        self.why = why                          # None: the fragment form applies
        self.wgmma = False                      # its matmuls on wgmma (tile_wgmma.py)
        self.wgmma_why: str | None = None       # why not, where the target has wgmma
        self.a_shared: list[str] = []           # shared tiles read as a matmul's A
        # the wgmma form's shared tiles in dynamic workgroup memory: bytes the launch must
        # give (0: static arrays), and each tile's byte offset in it
        self.dynamic = 0
        self.offsets: dict[str, int] = {}
        self.shared: dict[str, SharedSpec] = shared or {}
        self.warps = warps
        # id(tensor_matmul call) -> (n, loads): how many copy groups may still be in
        # flight when it reads its shared b (the loads surely issued since b's own), and
        # the ids of those loads' tile_load calls (one that synchronised makes b ready)
        self.waits: dict[int, tuple[int, tuple[int, ...]]] = waits or {}

    @property
    def fast(self) -> bool:
        return self.why is None


def _nodes(node, nested: bool = True):
    """Every AST node under `node` (itself included), depth first; without `nested`, none
    inside a nested statement list (a Block below `node`)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Node):
            yield n
            stack.extend(v for v in reversed(list(vars(n).values()))
                         if nested or not isinstance(v, A.Block))
        elif isinstance(n, (list, tuple)):
            stack.extend(x for x in reversed(n) if nested or not isinstance(x, A.Block))


def _tile_call(e, name: str) -> bool:
    return isinstance(e, A.Call) and isinstance(e.callee, A.Name) and e.callee.name == name


def _layout_col(call: A.Call) -> bool:
    for opt, value, _span in call.named_args:
        if opt == "layout" and isinstance(value, A.Name):
            return value.name == "col"
    return False


def plan_tiles(lw, body: A.Block) -> TilePlan:
    """The layout plan of a kernel body (`lw`: the FunctionLowerer, for types and flags)."""
    if not getattr(lw.ctx, "tile_mma", False):
        return TilePlan("the target has no m16n8k16 warp MMA (or --gpu-tile-mma=off)")
    shape = lw.sym.block_shape
    if shape is None or shape[1:] != (1, 1) or shape[0] % 128:
        return TilePlan("the kernel declares no 1-D block of a multiple of 128")
    warps = shape[0] // 32
    types, decls = {}, {}
    for n in _nodes(body):
        if isinstance(n, A.VarDecl) and isinstance(n.type, A.TileTypeExpr):
            if n.name in types:
                return TilePlan(f"tile variable `{n.name}` is declared twice")
            tt = _quiet_type(lw, n.type)
            if tt is None:
                return TilePlan(f"the type of tile variable `{n.name}` is not known "
                                "before the kernel body runs (a local const?)")
            types[n.name], decls[n.name] = tt, n
    if not types:
        return TilePlan("no tile variables")
    # b operands of tile matmuls; every other use of a name
    b_uses, other = set(), set()
    b_args = set()
    for n in _nodes(body):
        if _tile_call(n, "tensor_matmul") and len(n.args) >= 2 and _is_tile(n.args[0], types):
            b = n.args[1]
            if not (isinstance(b, A.Name) and b.name in types):
                return TilePlan("a tile matmul's b operand is not a tile variable (load it "
                                "into one)")
            b_uses.add(b.name)
            b_args.add(id(b))
        if isinstance(n, A.Call) and isinstance(n.callee, A.Name) and \
                n.callee.name in ("tile_col_max", "tile_col_sum"):
            return TilePlan(f"`{n.callee.name}` has no fragment form")
    for n in _nodes(body):              # an assignment's target is no use of the value
        if isinstance(n, A.Assign) and n.op == "=" and isinstance(n.target, A.Name):
            b_args.add(id(n.target))
    for n in _nodes(body):
        if isinstance(n, A.Name) and n.name in types and id(n) not in b_args:
            other.add(n.name)
    shared: dict[str, SharedSpec] = {}
    regs, smem = {}, 0
    for name, tt in types.items():
        if name in b_uses:
            if name in other:
                return TilePlan(f"`{name}` is a matmul b operand and is also used otherwise")
            loads = _assignments(body, decls[name], name)
            if not loads or not all(_tile_call(v, "tile_load") for v in loads):
                return TilePlan(f"`{name}` (a matmul b operand) is not assigned only by "
                                "tile_load")
            cols = {_layout_col(v) for v in loads}
            if len(cols) != 1:
                return TilePlan(f"`{name}` is loaded with both layouts")
            col = cols.pop()
            outer, inner = (tt.columns, tt.rows) if col else (tt.rows, tt.columns)
            smem += 2 * outer * (inner + PAD)
            shared[name] = SharedSpec(col, inner)
            continue
        if tt.rows == 1:
            return TilePlan(f"`{name}` is a 1 x C vector, which has no fragment form")
        if tt.rows % (16 * warps):
            return TilePlan(f"`{name}` has {tt.rows} rows: the fragment form gives each of "
                            f"the {warps} subgroups whole 16-row slabs")
        if tt.columns == 1:
            regs[name] = 2 * tt.rows // (16 * warps)
        else:
            regs[name] = tt.count // (32 * warps) // (1 if tt.format == "f32" else 2)
    peak = _peak_registers(body, regs)
    if peak > REGISTER_BUDGET:
        return TilePlan(f"the tile variables live at once need about {peak} registers per "
                        f"work-item (budget {REGISTER_BUDGET})")
    # padded shared tiles over the static budget: only the wgmma form (swizzled, in
    # dynamic memory past 48 KiB) can run this kernel in registers
    too_big = f"the shared tiles need {smem} bytes of workgroup memory (at most " \
        f"{SHARED_BYTES})" if smem > SHARED_BYTES else None
    waits: dict[int, tuple] = {}
    _waits(body.stmts, set(shared), waits)
    plan = TilePlan(None, shared, warps, waits)
    if getattr(lw.ctx, "tile_wgmma", False) and shared:     # (shared: some matmul)
        view = _has_dynamic_view(body)
        limit = DYNAMIC_BYTES if too_big and not view else SHARED_BYTES
        plan.wgmma_why = _wgmma_why(body, types, shared, warps, limit,
                                    "the kernel's own `workgroup var` view keeps tiles out "
                                    "of dynamic memory" if too_big and view else "")
        plan.wgmma = plan.wgmma_why is None
        if not plan.wgmma:
            for spec in shared.values():
                spec.swizzle = 0
            if too_big:
                return TilePlan(f"{too_big}; not on wgmma: {plan.wgmma_why}")
        else:
            if getattr(lw.ctx, "tile_wgmma_a", "shared") == "shared":
                _place_a(plan, body, types, decls, limit)
            sizes = {n: _swizzled_bytes(types[n]) for n in plan.shared}
            if sum(sizes.values()) > SHARED_BYTES:
                at = 0
                for name, size in sizes.items():
                    plan.offsets[name] = at
                    at += size                  # (each a multiple of SWIZZLE_ALIGN)
                plan.dynamic = at
    elif too_big:
        return TilePlan(too_big)
    return plan


_LOOPS = (A.While, A.For, A.ForRange)


def _peak_registers(body, regs: dict[str, int]) -> int:
    """The most registers the tile variables of `regs` need at one statement: a variable
    holds its registers from the first statement that names it to the last, and through
    every loop that names it when it is declared outside the loop (its value goes around
    the back edge). Statements are numbered in source order, a compound statement's own
    expressions before its blocks."""
    mentions: dict[str, list[int]] = {}
    declared: dict[str, int] = {}
    loops: list[tuple[int, int]] = []
    count = 0

    def visit(stmts):
        nonlocal count
        for st in stmts:
            at = count
            count += 1
            if isinstance(st, A.VarDecl) and st.name in regs:
                declared.setdefault(st.name, at)
                mentions.setdefault(st.name, []).append(at)
            for n in () if isinstance(st, A.Block) else _nodes(st, nested=False):
                if isinstance(n, A.Name) and n.name in regs:
                    mentions.setdefault(n.name, []).append(at)
            inner = [st] if isinstance(st, A.Block) else _blocks(st)
            for block in inner:
                visit(block.stmts)
            if isinstance(st, _LOOPS):
                loops.append((at, count - 1))
    visit(body.stmts)
    live = [0] * (count + 1)
    for name, where in mentions.items():
        lo, hi = min(where), max(where)
        for start, end in loops:
            if declared.get(name, -1) < start and any(start < w <= end for w in where):
                hi = max(hi, end)
        for i in range(lo, hi + 1):
            live[i] += regs[name]
    return max(live)


def _has_dynamic_view(body) -> bool:
    """Whether the kernel declares a `workgroup var` view of its dynamic memory."""
    return any(isinstance(n, A.VarDecl) and n.storage == "workgroup" and
               isinstance(n.type, A.PointerType) for n in _nodes(body))


def _place_a(plan: TilePlan, body, types, decls, limit: int) -> None:
    """Move the A tiles _a_in_shared finds into workgroup memory while the swizzled tiles
    fit (one that does not stays in registers): within `limit` bytes where the b tiles
    already need dynamic memory, else within the static 48 KiB; the matmuls reading them
    then also wait for their copies."""
    smem = sum(_swizzled_bytes(types[n]) for n in plan.shared)
    if smem <= SHARED_BYTES:
        limit = SHARED_BYTES
    for name, spec in _a_in_shared(body, types, decls, plan.shared).items():
        spec.swizzle = swizzle_of(spec.inner)
        size = _swizzled_bytes(types[name])
        if spec.swizzle and smem + size <= limit:
            smem += size
            plan.shared[name] = spec
            plan.a_shared.append(name)
    if plan.a_shared:
        plan.waits = {}
        _waits(body.stmts, set(plan.shared), plan.waits)


def _a_in_shared(body, types, decls, shared) -> dict[str, SharedSpec]:
    """16-bit tile variables assigned only by a row-layout `tile_load` and used only as
    the a operand of matmuls whose b is a shared tile: kept in workgroup memory, their
    rows (k contiguous) are a K-major A, the layout of a b loaded `layout: col`."""
    a_args = {id(n.args[0]) for n in _nodes(body)
              if _tile_call(n, "tensor_matmul") and len(n.args) >= 2 and
              isinstance(n.args[0], A.Name) and isinstance(n.args[1], A.Name) and
              n.args[1].name in shared}
    targets = {id(n.target) for n in _nodes(body)
               if isinstance(n, A.Assign) and n.op == "=" and isinstance(n.target, A.Name)}
    names = [n.name for n in _nodes(body) if isinstance(n, A.Name) and id(n) in a_args]
    other = {n.name for n in _nodes(body) if isinstance(n, A.Name) and
             id(n) not in a_args and id(n) not in targets}
    out = {}
    for name in dict.fromkeys(names):
        if name in other or types[name].format == "f32":
            continue
        loads = _assignments(body, decls[name], name)
        if loads and all(_tile_call(v, "tile_load") and not _layout_col(v) for v in loads):
            out[name] = SharedSpec(False, types[name].columns)
    return out


def _swizzled_bytes(tt) -> int:
    return -(-2 * tt.count // SWIZZLE_ALIGN) * SWIZZLE_ALIGN


# wgmma m64nNk16 with f16/bf16 inputs: N a multiple of 8 from 8 to 256 (PTX ISA 9.0,
# "Matrix shape" of wgmma.mma_async; targets/ptx/isa.py's form m64n{N}k16)
WGMMA_N = (8, 256)


def swizzle_of(inner: int) -> int:
    """The widest swizzle (bytes of one swizzled row) whose rows a contiguous dimension of
    `inner` 16-bit elements fills exactly, or 0: 128 for multiples of 64 elements, 64 for
    32, 32 for 16 (cute's Layout_{K,MN}_SW{128,64,32}_Atom, mma_traits_sm90_gmma.hpp)."""
    return next((s for s in (128, 64, 32) if (2 * inner) % s == 0), 0)


def _wgmma_why(body, types, shared, warps, limit: int, note: str = "") -> str | None:
    """Why the fragment plan cannot put its matmuls on wgmma with A from registers (None:
    it can, and each shared tile's `swizzle` is set). Warp w owns slabs w, w + warps, ...,
    so with warps = 4q warpgroup g's slab k is the 64-row block g + q k, its warps in order:
    wgmma's m64 rows 16 (warp % 4) + ... are exactly the fragment rows."""
    if warps % 4:
        return f"the {warps} subgroups are not whole warpgroups of 4"
    matmuls = [n for n in _nodes(body) if _tile_call(n, "tensor_matmul") and
               len(n.args) >= 2 and isinstance(n.args[1], A.Name) and
               n.args[1].name in shared]
    for n in matmuls:
        name = n.args[1].name
        tt = types[name]
        if tt.rows % 16:
            return f"`{name}` has {tt.rows} rows: wgmma steps k by 16"
        lo, hi = WGMMA_N
        if tt.columns % 8 or not lo <= tt.columns <= hi:
            return (f"`{name}` has {tt.columns} columns: wgmma m64nNk16 takes N a multiple "
                    f"of 8 from {lo} to {hi}")
    smem = 0
    for name, spec in shared.items():
        tt = types[name]
        spec.swizzle = swizzle_of(spec.inner)
        if not spec.swizzle:
            return (f"`{name}`'s contiguous dimension ({spec.inner} elements) is not a "
                    "multiple of 16, the narrowest swizzled wgmma layout")
        smem += _swizzled_bytes(tt)
    if smem > limit:
        return (f"the swizzled shared tiles need {smem} bytes of workgroup memory "
                f"(at most {limit}{'; ' + note if note else ''})")
    return None


def _is_tile(e, types) -> bool:
    if isinstance(e, A.Name):
        return e.name in types
    if isinstance(e, A.Call) and isinstance(e.callee, A.Name):
        return e.callee.name.startswith("tile_") or e.callee.name == "tensor_matmul"
    return isinstance(e, (A.Binary, A.Unary))


def _assignments(body, decl: A.VarDecl, name: str) -> list:
    out = [] if decl.init is None else [decl.init]
    for n in _nodes(body):
        if isinstance(n, A.Assign) and isinstance(n.target, A.Name) and n.target.name == name:
            if n.op != "=":
                return []
            out.append(n.value)
    return out


def _loads(stmt, shared: set) -> set:
    """Shared tiles that `stmt` may load (anywhere inside it)."""
    out = set()
    for n in _nodes(stmt):
        if isinstance(n, A.VarDecl) and n.name in shared and n.init is not None:
            out.add(n.name)
        elif isinstance(n, A.Assign) and isinstance(n.target, A.Name) and \
                n.target.name in shared:
            out.add(n.target.name)
    return out


def _sure_load(stmt, shared: set) -> bool:
    """Whether `stmt` is itself one load of a shared tile (one copy group, always issued
    when the statement runs)."""
    if isinstance(stmt, A.VarDecl):
        return stmt.name in shared and stmt.init is not None
    return isinstance(stmt, A.Assign) and isinstance(stmt.target, A.Name) and \
        stmt.target.name in shared


def _load_call(stmt):
    return stmt.init if isinstance(stmt, A.VarDecl) else stmt.value


def _waits(stmts, shared: set, out: dict) -> None:
    """For each matmul reading a shared tile X in statement i of this list: the loads
    that are whole statements between X's last load in the list (or the list's start) and
    statement i. They run after X's latest copies on every path (a loop body's earlier
    statements follow the previous iteration's and the pre-loop loads alike), so waiting
    until at most that many copy groups are in flight completes X's. A matmul reading two
    shared tiles (a shared A) takes the fewer: those loads follow both tiles' last."""
    for i, st in enumerate(stmts):
        if isinstance(st, A.Switch):        # case bodies are bare lists: wait for all
            for n in _nodes(st):
                if _tile_call(n, "tensor_matmul"):
                    out[id(n)] = (0, ())
            continue
        for n in _nodes(st, nested=False):
            if not (_tile_call(n, "tensor_matmul") and len(n.args) >= 2):
                continue
            for x in {a.name for a in n.args[:2] if isinstance(a, A.Name)} & shared:
                j = max((k for k in range(i) if x in _loads(stmts[k], shared)), default=-1)
                sure = [_load_call(stmts[k]) for k in range(j + 1, i)
                        if _sure_load(stmts[k], shared)]
                if id(n) not in out or len(sure) < out[id(n)][0]:
                    out[id(n)] = (len(sure), tuple(id(c) for c in sure))
        for child in _blocks(st):
            _waits(child.stmts, shared, out)
        if isinstance(st, A.Block):
            _waits(st.stmts, shared, out)


def _blocks(stmt):
    """The statement lists directly inside `stmt` (not inside those)."""
    if isinstance(stmt, A.Block):
        return []
    found = []
    stack = [v for v in vars(stmt).values()]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Block):
            found.append(n)
        elif isinstance(n, A.Node):
            stack.extend(vars(n).values())
        elif isinstance(n, (list, tuple)):
            stack.extend(n)
    return found


def _quiet_type(lw, t):
    """The tile type of a declaration, or None, reporting nothing (the lowering reports)."""
    from .lower_stmt import Abort
    before = lw.ctx.bag.mark()
    try:
        return lw.tile_type(t)
    except Abort:
        lw.ctx.bag.rollback(before)
        return None
