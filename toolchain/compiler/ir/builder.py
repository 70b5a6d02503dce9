"""The public IR builder: the only way frontends create IR.

Any frontend (Mettle's, or another one that never imports it) builds modules here:

    b = Builder(Module("m"))
    f = b.function("vadd", [("a", ptr(F32, "global")), ("n", I32)], VOID, kind="kernel")
    b.position_at_end(b.append_block(f, "entry"))
    i = b.convert(b.gpu_index("thread", "x"), I32)
    ...

Every method checks its operand types when it builds (llvmlite-style) and raises
`IRTypeError` on a mismatch, so a frontend bug surfaces at its source, not in a backend.
"""
from __future__ import annotations

from collections.abc import Sequence

from . import ops as O
from .module import Block, Const, Function, Global, Instr, KernelDecl, Local, Module, Param
from .ssa_builder import SSABuilder
from .types import (BOOL, I64, U32, VOID, ArrayType, FloatType, FnPtrType, IntType,
                     StructType, Type, ptr)


class IRTypeError(ValueError):
    pass


_TERMINATORS = frozenset(("br", "cbr", "ret", "unreachable"))


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise IRTypeError(msg)


class Builder:
    def __init__(self, module: Module):
        self.module = module
        self.block: Block | None = None
        self._strings: dict[bytes, Global] = {}
        self.ssa: SSABuilder | None = None   # set: scalar locals are built as SSA values

    # ---- module-level declarations -------------------------------------------------
    def function(self, name: str, params: Sequence[tuple[str, Type]], ret: Type,
                 kind: str = "function", linkage: str = "internal",
                 link_name: str | None = None, block_shape=None, per_warp: bool = False,
                 span: object = None) -> Function:
        _check(name not in self.module.functions, f"function @{name} already defined")
        _check(kind in ("function", "kernel", "extern"), f"bad function kind {kind}")
        if kind == "kernel":
            _check(ret == VOID, f"kernel @{name} must return void")
        fn = Function(name, [Param(t, n, i) for i, (n, t) in enumerate(params)], ret,
                      kind=kind, linkage="import" if kind == "extern" else linkage,
                      link_name=link_name, block_shape=block_shape, per_warp=per_warp,
                      span=span)
        self.module.functions[name] = fn
        if kind == "kernel":
            self.module.kernel_decls[name] = KernelDecl(
                name, [p.type for p in fn.params], block_shape, per_warp)
        return fn

    def extern_function(self, name: str, params: Sequence[tuple[str, Type]], ret: Type,
                        link_name: str | None = None) -> Function:
        return self.function(name, params, ret, kind="extern", link_name=link_name)

    def kernel_decl(self, name: str, params: Sequence[Type], block_shape=None,
                    per_warp: bool = False) -> KernelDecl:
        decl = KernelDecl(name, list(params), block_shape, per_warp)
        self.module.kernel_decls[name] = decl
        return decl

    def global_var(self, name: str, value_type: Type, init: object = None,
                   constant: bool = False, space: str = "generic",
                   linkage: str = "internal", link_name: str | None = None) -> Global:
        _check(name not in self.module.globals, f"global @{name} already defined")
        g = Global(name, value_type, init, constant, space, linkage, link_name)
        self.module.globals[name] = g
        return g

    def string_literal(self, data: bytes) -> Global:
        """A NUL-terminated constant byte array, deduplicated per module."""
        if data not in self._strings:
            name = f".str.{len(self._strings)}"
            self._strings[data] = self.global_var(
                name, ArrayType(IntType(8, False), len(data) + 1), data + b"\0", constant=True)
        return self._strings[data]

    # ---- blocks and locals -----------------------------------------------------------
    def append_block(self, fn: Function, name: str = "bb") -> Block:
        used = {b.name for b in fn.blocks}
        base, n = name, 1
        while name in used:
            name, n = f"{base}.{n}", n + 1
        blk = Block(name, function=fn)
        fn.blocks.append(blk)
        return blk

    def position_at_end(self, block: Block) -> None:
        self.block = block
        if self.ssa is not None:
            self.ssa.entered(block)

    @property
    def function_(self) -> Function:
        assert self.block is not None and self.block.function is not None
        return self.block.function

    def local(self, fn: Function, type: Type, name: str = "v") -> Local:
        used = {l.name for l in fn.locals}
        base, n = name, 1
        while name in used:
            name, n = f"{base}.{n}", n + 1
        loc = Local(type, name)
        fn.locals.append(loc)
        return loc

    @property
    def terminated(self) -> bool:
        return self.block is not None and self.block.terminator is not None

    # ---- emission core ---------------------------------------------------------------
    def emit(self, op: str, type: Type, operands: Sequence[object] = (), attrs=None,
             targets: Sequence[Block] = (), span: object = None) -> Instr:
        # The hottest builder path (once per instruction): the checks are spelled inline so
        # their messages are formatted only on failure. _TERMINATORS is Block.terminator's set.
        block = self.block
        if op not in O.OPS:
            raise IRTypeError(f"unknown op {op}")
        if block is None:
            raise IRTypeError("builder is not positioned in a block")
        instrs = block.instrs
        if instrs and instrs[-1].op in _TERMINATORS:
            raise IRTypeError(f"block {block.name} already terminated")
        ins = Instr(op, type, list(operands), dict(attrs) if attrs else {}, list(targets), span,
                    block)
        instrs.append(ins)
        return ins

    @staticmethod
    def const(type: Type, value: object) -> Const:
        if isinstance(type, IntType):
            _check(isinstance(value, int), f"int constant expected for {type}")
            value = type.wrap(value)
        elif isinstance(type, FloatType):
            value = float(value)
        elif type == BOOL:
            value = bool(value)
        else:
            _check(type.is_ptr or isinstance(type, FnPtrType), f"no constants of {type}")
            _check(value == 0, "the only pointer constant is null")
        return Const(type, value)

    # ---- arithmetic ------------------------------------------------------------------
    def binop(self, op: str, a, b, span=None) -> Instr:
        _check(a.type == b.type, f"{op}: {a.type} vs {b.type}")
        t = a.type
        if op in ("and", "or", "xor"):
            _check(t.is_int or t.is_bool, f"{op} needs integers, got {t}")
        elif op in ("shl", "shr", "rem"):
            _check(t.is_int, f"{op} needs integers, got {t}")
        else:
            _check(t.is_int or t.is_float, f"{op} needs numbers, got {t}")
        return self.emit(op, t, [a, b], span=span)

    def add(self, a, b, span=None): return self.binop("add", a, b, span)
    def sub(self, a, b, span=None): return self.binop("sub", a, b, span)
    def mul(self, a, b, span=None): return self.binop("mul", a, b, span)
    def div(self, a, b, span=None): return self.binop("div", a, b, span)
    def rem(self, a, b, span=None): return self.binop("rem", a, b, span)

    def unop(self, op: str, a, span=None) -> Instr:
        _check(a.type.is_int or (op == "neg" and a.type.is_float) or
               (op == "not" and a.type.is_bool), f"{op}: bad operand {a.type}")
        return self.emit(op, a.type, [a], span=span)

    def cmp(self, pred: str, a, b, span=None) -> Instr:
        _check(pred in O.CMP_PREDICATES, f"bad predicate {pred}")
        _check(a.type == b.type, f"cmp: {a.type} vs {b.type}")
        _check(a.type.is_scalar, f"cmp needs scalars, got {a.type}")
        return self.emit("cmp", BOOL, [a, b], {"pred": pred}, span=span)

    def select(self, cond, a, b, span=None) -> Instr:
        _check(cond.type == BOOL and a.type == b.type, "select: bad operand types")
        return self.emit("select", a.type, [cond, a, b], span=span)

    def convert(self, a, to: Type, span=None):
        if a.type == to:
            return a
        ok = (a.type.is_int or a.type.is_float or a.type.is_bool) and \
             (to.is_int or to.is_float or to.is_bool)
        _check(ok, f"convert: {a.type} -> {to}")
        return self.emit("convert", to, [a], span=span)

    def bitcast(self, a, to: Type, span=None):
        if a.type == to:
            return a
        _check(a.type.size == to.size and not a.type.is_aggregate, f"bitcast {a.type}->{to}")
        return self.emit("bitcast", to, [a], span=span)

    def ptrtoint(self, a, to: Type, span=None) -> Instr:
        _check(a.type.is_ptr or isinstance(a.type, FnPtrType), "ptrtoint needs a pointer")
        _check(to.is_int, "ptrtoint yields an integer")
        return self.emit("ptrtoint", to, [a], span=span)

    def inttoptr(self, a, to: Type, span=None) -> Instr:
        _check(a.type.is_int and (to.is_ptr or isinstance(to, FnPtrType)), "inttoptr types")
        return self.emit("inttoptr", to, [a], span=span)

    def addrspacecast(self, a, space: str, span=None):
        _check(a.type.is_ptr, "addrspacecast needs a pointer")
        if a.type.space == space:
            return a
        return self.emit("addrspacecast", ptr(a.type.pointee, space), [a], span=span)

    def phi(self, type: Type, incoming: Sequence[tuple[object, Block]] = (),
            span=None) -> Instr:
        """An SSA merge at the head of the current block (after its other phis): operand i
        arrives from block i of `incoming`. Arms may be added later with `add_incoming`."""
        for v, _ in incoming:
            _check(v.type == type, f"phi {type}: incoming {v.type}")
        block = self.block
        _check(block is not None, "builder is not positioned in a block")
        ins = Instr("phi", type, [v for v, _ in incoming], {}, [b for _, b in incoming], span,
                    block)
        block.instrs.insert(block.first_non_phi(), ins)
        return ins

    @staticmethod
    def add_incoming(phi: Instr, value, block: Block) -> None:
        _check(phi.op == "phi" and value.type == phi.type, "add_incoming: bad phi arm")
        phi.operands.append(value)
        phi.targets.append(block)

    # ---- memory ----------------------------------------------------------------------
    def load(self, p, span=None) -> Instr:
        _check(p.type.is_ptr, f"load from non-pointer {p.type}")
        return self.emit("load", p.type.pointee, [p], span=span)

    def store(self, p, v, span=None) -> Instr:
        _check(p.type.is_ptr and p.type.pointee == v.type, f"store {v.type} to {p.type}")
        return self.emit("store", VOID, [p, v], span=span)

    def ptradd(self, p, index, span=None) -> Instr:
        _check(p.type.is_ptr and index.type == I64, f"ptradd {p.type} by {index.type}")
        return self.emit("ptradd", p.type, [p, index], span=span)

    def byteadd(self, p, offset, span=None) -> Instr:
        _check(p.type.is_ptr and offset.type == I64, "byteadd types")
        return self.emit("byteadd", p.type, [p, offset], span=span)

    def fieldptr(self, p, index: int, span=None) -> Instr:
        st = p.type.pointee if p.type.is_ptr else None
        _check(isinstance(st, StructType), f"fieldptr on {p.type}")
        return self.emit("fieldptr", ptr(st.fields[index][1], p.type.space), [p],
                         {"index": index}, span=span)

    def elemptr(self, p, span=None) -> Instr:
        """ptr<[N x T]> -> ptr<T> (first element), as a bitcast."""
        at = p.type.pointee
        _check(isinstance(at, ArrayType), f"elemptr on {p.type}")
        return self.emit("bitcast", ptr(at.elem, p.type.space), [p], span=span)

    def alloca(self, type: Type, name: str = "", span=None) -> Instr:
        return self.emit("alloca", ptr(type, "private"), [], {"type": type, "name": name},
                         span=span)

    def local_get(self, loc: Local, span=None):
        """The slot's value: a `local.get`, or in SSA mode (scalar slots) the value itself.
        A constant read that way is a fresh `Const` that `from_variable` recognises: a
        variable holding 0 is still not the literal 0 to the language's checks."""
        ssa = self.ssa
        if ssa is not None and loc.type.is_scalar:
            v = ssa.fixed.get(loc)
            if v is None:
                v = ssa.read(loc, self.block)
            if v.__class__ is Const:
                v = Const(v.type, v.value)
                ssa.read_consts.add(v)
            return v
        return self.emit("local.get", loc.type, [loc], span=span)

    def local_set(self, loc: Local, v, span=None, final: bool = False) -> Instr | None:
        """In SSA mode (scalar slots) a write of the variable, no instruction. `final`: the
        slot is never written again (a declaration the frontend knows is not assigned
        later), so `v` is every read's value, with no per-block bookkeeping and no phis."""
        _check(v.type == loc.type, f"local.set {loc.name}: {v.type} into {loc.type}")
        ssa = self.ssa
        if ssa is not None and loc.type.is_scalar:
            if final:
                ssa.fixed[loc] = v
            else:
                ssa.write(loc, self.block, v)
            return None
        return self.emit("local.set", VOID, [loc, v], span=span)

    def from_variable(self, v) -> bool:
        """Whether `v` is an SSA-mode read of a variable (never a literal)."""
        return self.ssa is not None and v in self.ssa.read_consts

    def memcpy(self, dst, src, size: int, span=None) -> Instr:
        return self.emit("memcpy", VOID, [dst, src], {"size": size}, span=span)

    # ---- calls -----------------------------------------------------------------------
    def call(self, fn: Function, args: Sequence[object], span=None) -> Instr:
        _check(len(args) == len(fn.params), f"call @{fn.name}: {len(args)} args, "
               f"{len(fn.params)} params")
        for a, p in zip(args, fn.params):
            _check(a.type == p.type, f"call @{fn.name}: arg {p.name} {a.type} != {p.type}")
        return self.emit("call", fn.ret, [fn, *args], span=span)

    def call_indirect(self, fp, args: Sequence[object], span=None) -> Instr:
        _check(isinstance(fp.type, FnPtrType), "call_indirect needs a function pointer")
        return self.emit("call_indirect", fp.type.ret, [fp, *args], span=span)

    # ---- host run-time checks (ir/checks.py) -----------------------------------------
    def check(self, op: str, operands: Sequence[object], site: str, span=None,
              **attrs) -> Instr:
        """A `check.*` instruction; `site` ("file:line:col") starts its failure message."""
        _check(op in O.CHECK_OPS, f"unknown check {op}")
        if op in ("check.index", "check.range"):
            _check(all(v.type == I64 for v in operands[:3 if op == "check.range" else 2]),
                   f"{op} needs i64 operands")
        elif op == "check.null":
            _check(operands[0].type.is_ptr or isinstance(operands[0].type, FnPtrType),
                   "check.null needs a pointer")
        else:
            _check(operands[0].type.is_int, "check.nonzero needs an integer")
        if attrs.get("guarded"):
            _check(operands[-1].type == BOOL, f"{op}: the guard must be a bool")
        return self.emit(op, VOID, operands, {"site": site, **attrs}, span=span)

    # ---- terminators -----------------------------------------------------------------
    def br(self, target: Block, span=None) -> Instr:
        ins = self.emit("br", VOID, targets=[target], span=span)
        if self.ssa is not None:
            self.ssa.edge(self.block, target)
        return ins

    def cbr(self, cond, then: Block, else_: Block, span=None) -> Instr:
        _check(cond.type == BOOL, f"cbr on {cond.type}")
        ins = self.emit("cbr", VOID, [cond], targets=[then, else_], span=span)
        if self.ssa is not None:
            self.ssa.edge(self.block, then)
            self.ssa.edge(self.block, else_)
        return ins

    def ret(self, value=None, span=None) -> Instr:
        fn = self.function_
        if value is None:
            _check(fn.ret == VOID, f"@{fn.name} must return {fn.ret}")
            return self.emit("ret", VOID, span=span)
        _check(value.type == fn.ret, f"@{fn.name} returns {fn.ret}, got {value.type}")
        return self.emit("ret", VOID, [value], span=span)

    def unreachable(self, span=None) -> Instr:
        return self.emit("unreachable", VOID, span=span)

    # ---- GPU operations --------------------------------------------------------------
    def gpu_index(self, kind: str, axis: str, span=None) -> Instr:
        _check(kind in O.INDEX_KINDS and axis in O.AXES, f"bad index {kind}.{axis}")
        return self.emit("gpu.index", U32, [], {"kind": kind, "axis": axis}, span=span)

    def gpu_alloc(self, space: str, elem: Type, count: int, name: str = "",
                  span=None, align: int = 0) -> Instr:
        """`align`: a larger base alignment in bytes than the backend's default (a power of
        two; 0: the default)."""
        _check(space in ("workgroup", "private"), f"gpu.alloc in {space}")
        _check(elem.is_int or elem.is_float, "gpu.alloc element must be a scalar number")
        _check(count > 0, "gpu.alloc extent must be nonzero")
        _check(align & (align - 1) == 0, "gpu.alloc alignment must be a power of two")
        attrs = {"space": space, "elem": elem, "count": count, "name": name}
        if align:
            attrs["align"] = align
        return self.emit("gpu.alloc", ptr(elem, space), [], attrs, span=span)

    def dynamic_shared(self, elem: Type, name: str = "", span=None, align: int = 16) -> Instr:
        attrs = {"elem": elem, "name": name}
        if align != 16:             # the arena's base alignment (bytes), when more than 16
            attrs["align"] = align
        return self.emit("gpu.dynamic_shared", ptr(elem, "workgroup"), [], attrs, span=span)

    def barrier(self, regions=("workgroup",), order: str = "seq_cst", span=None) -> Instr:
        _check(order in O.MEMORY_ORDERS[1:], f"bad barrier order {order}")
        _check(set(regions) <= {"workgroup", "global"} and regions, "bad barrier regions")
        return self.emit("gpu.barrier", VOID, [],
                         {"regions": tuple(sorted(set(regions), reverse=True)),
                          "order": order}, span=span)

    def _atomic_attrs(self, p, order: str, scope: str | None, space: str | None) -> dict:
        _check(p.type.is_ptr and p.type.pointee in (U32, IntType(64, False)),
               f"atomics need ptr<u32|u64>, got {p.type}")
        space = space or ("workgroup" if p.type.space == "workgroup" else "global")
        scope = scope or ("workgroup" if space == "workgroup" else "device")
        _check(order in O.MEMORY_ORDERS and scope in O.SCOPES, "bad atomic order/scope")
        return {"order": order, "scope": scope, "space": space}

    def atomic_load(self, p, order="seq_cst", scope=None, space=None, span=None) -> Instr:
        return self.emit("atomic.load", p.type.pointee, [p],
                         self._atomic_attrs(p, order, scope, space), span=span)

    def atomic_store(self, p, v, order="seq_cst", scope=None, space=None, span=None):
        _check(v.type == p.type.pointee, "atomic.store value type")
        return self.emit("atomic.store", VOID, [p, v],
                         self._atomic_attrs(p, order, scope, space), span=span)

    def atomic_rmw(self, op: str, p, v, order="seq_cst", scope=None, space=None, span=None):
        _check(op in O.ATOMIC_RMW_OPS and v.type == p.type.pointee, f"atomic.rmw {op}")
        attrs = self._atomic_attrs(p, order, scope, space)
        attrs["op"] = op
        return self.emit("atomic.rmw", v.type, [p, v], attrs, span=span)

    def atomic_cmpxchg(self, p, expected, desired, success="seq_cst", failure="seq_cst",
                       scope=None, space=None, span=None) -> Instr:
        _check(expected.type == desired.type == p.type.pointee, "atomic.cmpxchg types")
        attrs = self._atomic_attrs(p, success, scope, space)
        attrs["failure_order"] = failure
        return self.emit("atomic.cmpxchg", expected.type, [p, expected, desired], attrs,
                         span=span)

    def async_copy(self, dst, src, count, transaction: int, cache: str = "all", span=None):
        _check(dst.type.is_ptr and dst.type.space == "workgroup", "async.copy dst space")
        _check(src.type.is_ptr and src.type.pointee == dst.type.pointee, "async.copy types")
        _check(transaction in (4, 8, 16) and cache in ("all", "global"), "async.copy attrs")
        return self.emit("async.copy", VOID, [dst, src, count],
                         {"transaction": transaction, "cache": cache}, span=span)

    def async_commit(self, span=None) -> Instr:
        return self.emit("async.commit", VOID, span=span)

    def async_wait(self, pending: int, span=None) -> Instr:
        return self.emit("async.wait", VOID, [], {"pending": pending}, span=span)

    def subgroup(self, name: str, type: Type, operands=(), attrs=None, span=None) -> Instr:
        return self.emit(f"subgroup.{name}", type, operands, attrs, span=span)

    def intrinsic(self, op: str, type: Type, operands=(), attrs=None, span=None) -> Instr:
        """Math/bit/packed/debug operations of the table (`math.sqrt`, `int.dp4a`, ...)."""
        return self.emit(op, type, operands, attrs, span=span)

    def launch(self, handle, grid: Sequence[object], block: Sequence[object], shared, stream,
               args: Sequence[object], kernel: str | None = None, span=None) -> Instr:
        _check(len(grid) == 3 and len(block) == 3, "launch needs 3-D grid and block")
        _check(len(args) <= 64, "launch takes at most 64 arguments")
        return self.emit("gpu.launch", VOID, [handle, *grid, *block, shared, stream, *args],
                         {"kernel": kernel, "nargs": len(args)}, span=span)

    # ---- GPU: cooperative tensor operations (descriptors: ir/tensor.py) ---------------
    def _tensor_named(self, desc, allowed: Sequence[str], named: dict) -> tuple[list, tuple]:
        from . import tensor as T
        unknown = set(named) - set(allowed)
        _check(not unknown, f"tensor op: unknown operand roles {sorted(unknown)}")
        roles = tuple(r for r in allowed if r in named)
        ops = []
        for r in roles:
            v = named[r]
            if r in T.POINTER_ROLES:
                _check(v.type.is_ptr, f"tensor op: `{r}` must be a pointer, got {v.type}")
            elif r.startswith("ld"):
                _check(v.type == U32, f"tensor op: runtime `{r}` must be u32, got {v.type}")
            ops.append(v)
        return ops, roles

    def _tensor_ptrs(self, desc, a, b, c, d, named: dict) -> None:
        from . import tensor as T
        for name, v, fmt in (("a", a, desc.a_type), ("b", b, desc.b_type),
                             ("c", c, desc.accumulator_type), ("d", d, desc.result_type)):
            _check(v.type.is_ptr and v.type.pointee == T.storage_type(fmt),
                   f"tensor op: `{name}` must point to {T.storage_type(fmt)} for {fmt}, "
                   f"got {v.type}")
        if "metadata" in named:
            _check(named["metadata"].type.pointee == T.storage_type("u8"),
                   "tensor op: metadata is uint8*")
        for s in ("a_scale", "b_scale"):
            if s in named:
                want = T.scale_storage(desc, s[0])
                _check(named[s].type.pointee == want, f"tensor op: {s} is {want}*")

    def _tensor_validate(self, errs) -> None:
        _check(not errs, "tensor op: " + "; ".join(m for _, m in errs))

    def tensor_mma(self, desc, a, b, c, d, named: dict | None = None, span=None) -> Instr:
        """One whole D = A*B + C tile. `named` maps optional roles (ir/tensor.MMA_ROLES:
        runtime lda..ldd as u32, metadata/a_scale/b_scale pointers) to values."""
        from . import tensor as T
        named = dict(named or {})
        ops, roles = self._tensor_named(desc, T.MMA_ROLES, named)
        self._tensor_validate(T.validate_desc(desc, roles))
        self._tensor_ptrs(desc, a, b, c, d, named)
        return self.emit("tensor.mma", VOID, [a, b, c, d, *ops],
                         {"desc": desc, "roles": ("a", "b", "c", "d", *roles)}, span=span)

    def tensor_matmul(self, desc, a, b, c, d, controls: Sequence[object],
                      named: dict | None = None, span=None, epilogue=None) -> Instr:
        """One bounded output region: `controls` = (row, column, M, N, K), all u32. Every
        leading dimension is explicit: static in `desc` or a runtime u32 in `named`.
        `epilogue` (T.matmul_epilogue) fuses one; its operands are in `named` too."""
        from . import tensor as T
        named = dict(named or {})
        _check(len(controls) == 5 and all(v.type == U32 for v in controls),
               "tensor.matmul needs five u32 controls (row, column, M, N, K)")
        extra = T.MATMUL_EPILOGUE_ROLES if epilogue is not None else ()
        ops, roles = self._tensor_named(desc, T.MMA_ROLES + T.MATMUL_ROLES + extra, named)
        self._tensor_validate(T.validate_desc(desc, roles))
        if epilogue is not None:
            self._tensor_validate(T.validate_matmul_epilogue(desc, epilogue, roles))
        for ld in ("lda", "ldb", "ldc", "ldd"):
            _check(ld in roles or getattr(desc, ld) is not None,
                   f"tensor.matmul needs an explicit `{ld}`")
        self._tensor_ptrs(desc, a, b, c, d, named)
        attrs = {"desc": desc, "roles": ("a", "b", "c", "d", *T.MATMUL_CONTROLS, *roles)}
        if epilogue is not None:
            attrs["epilogue"] = epilogue
        return self.emit("tensor.matmul", VOID, [a, b, c, d, *controls, *ops], attrs,
                         span=span)

    def tensor_epilogue(self, desc, d, named: dict | None = None, span=None) -> Instr:
        """D = act(alpha*D + beta*bias) over one tile. Scalars (alpha, beta, clamp bounds)
        have the compute type (f64 for f64 storage, f32 otherwise)."""
        from . import tensor as T
        named = dict(named or {})
        ops, roles = self._tensor_named(desc, T.EPILOGUE_ROLES, named)
        self._tensor_validate(T.validate_epilogue(desc, roles))
        st, ct = T.storage_type(desc.element_type), T.compute_type(desc.element_type)
        _check(d.type.is_ptr and d.type.pointee == st, f"tensor.epilogue: d must point to {st}")
        if "bias" in named:
            _check(named["bias"].type.pointee == st, f"tensor.epilogue: bias must point to {st}")
        for r in ("alpha", "beta", "clamp_min", "clamp_max"):
            if r in named:
                _check(named[r].type == ct, f"tensor.epilogue: {r} must be {ct}")
        return self.emit("tensor.epilogue", VOID, [d, *ops],
                         {"desc": desc, "roles": ("d", *roles)}, span=span)
