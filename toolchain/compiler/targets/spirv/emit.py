"""IR module -> SPIR-V binary for OpenCL 2.0: `emit_spirv(module, gpu_checks=False)`.

Shape of every module (gpu.md "SPIR-V (OpenCL) target"):
  * SPIR-V 1.0, Physical64 addressing, OpenCL memory model; capabilities are exactly what
    the instructions use (Kernel, Addresses, Int64 for size_t built-ins, Int8/Int16/
    Float64 only when those widths appear (half2.fma computes in f64), Float16Buffer
    for the half* that vload_half/vstore_half take (never Float16), Groups/
    SubgroupBallotKHR/SubgroupVoteKHR for subgroups, GenericPointer for generic
    pointers, Int64Atomics for u64 atomics).
  * One `OpEntryPoint Kernel` per kernel, whose interface lists the built-in Input
    variables its call tree loads; `kernel(block=...)` adds `OpExecutionMode LocalSize`.
  * Helpers the kernels reach (device_program's order, callees first) are ordinary
    OpFunctions; host functions no kernel reaches are not emitted.
  * Kernel ABI: a kernel parameter in the generic space arrives as a CrossWorkgroup
    pointer (OpenCL kernel arguments cannot be generic) and is cast to Generic on entry;
    a bool parameter arrives as uchar. A kernel using `gpu.dynamic_shared` gets ONE hidden
    trailing Workgroup pointer parameter: the OpenCL host must bind the launch's dynamic
    byte count to it as a local-memory argument (clSetKernelArg(k, last, bytes, NULL)).
  * Control flow is free branching (OpBranch/OpBranchConditional, no merge instructions),
    legal because only the Shader capability requires structured control flow.
Errors: capability gaps raise CompileError E051x at the op's span (capabilities.py); a
SpirvBuildError or other exception inside the backend becomes E0900, never a traceback.
Output is deterministic: emission follows list/dict insertion order only.
"""
from __future__ import annotations

import struct

from ...diagnostics import CompileError
from ...ir.callgraph import device_program
from ...ir.ops import OPS
from ...ir.module import Function, Global, Module as IRModule
from ...ir.types import ArrayType, BoolType, FloatType, IntType, PtrType
from . import capabilities as caps
from . import (emit_arith, emit_control, emit_math, emit_memory, emit_subgroup, emit_sync,
               emit_tile)
from . import tensor_reject
from .emit_function import FnEmitter, register
from .module import Module
from .types_map import STORAGE, TypeMap

_LOWERINGS = (emit_arith, emit_control, emit_math, emit_memory, emit_subgroup, emit_sync,
              emit_tile)
SUBGROUP_OPS = ("khr", "core")


def emit_spirv(module: IRModule, gpu_checks: bool = False, *,
               subgroup_ops: str = "khr") -> bytes:
    """Compile the device program of `module` to a SPIR-V binary (bytes).

    `gpu_checks` is accepted for CLI symmetry with PTX; SPIR-V has no trap, so a
    debug.assert is rejected (E0513) whether or not checks are on. `subgroup_ops` picks
    how ballot/any/all are spelled: "khr" (default, gpu.md: SPV_KHR_shader_ballot and
    SPV_KHR_subgroup_vote) or "core" (SPIR-V 1.0 Groups only; see emit_subgroup.py)."""
    del gpu_checks
    if subgroup_ops not in SUBGROUP_OPS:
        raise ValueError(f"subgroup_ops must be one of {SUBGROUP_OPS}, not {subgroup_ops!r}")
    _reject_unknown_ops(module)
    program = device_program(module)
    try:
        ctx = Context(subgroup_ops)
        return ctx.emit_program(program)
    except CompileError:
        raise
    except Exception as exc:  # noqa: BLE001 - any backend bug becomes E0900
        raise caps.internal(exc, f"module `{module.name}`") from exc


class Context:
    """Module-wide state shared by the function emitters."""

    def __init__(self, subgroup_ops: str = "khr") -> None:
        self.subgroup_ops = subgroup_ops
        self.m = Module(addressing="Physical64", memory_model="OpenCL", version=(1, 0))
        self.types = TypeMap(self.m)
        self._builtins: dict[str, int] = {}
        self._globals: dict[int, int] = {}
        self.fn_ids: dict[str, int] = {}

    # shared resources -------------------------------------------------------------------
    def std(self) -> int:
        return self.m.ext_inst_import("OpenCL.std")

    def builtin(self, name: str, type_id: int) -> int:
        """The module-scope Input variable of built-in `name` (created once)."""
        if name not in self._builtins:
            var = self.m.variable(self.m.type_pointer("Input", type_id), "Input")
            self.m.decorate(var, "BuiltIn", name)
            self.m.decorate(var, "Constant")
            self.m.name(var, f"__spirv_BuiltIn{name}")
            self._builtins[name] = var
        return self._builtins[name]

    def global_var(self, g: Global) -> int:
        """Module-scope storage for an IR global (constant or global space only)."""
        if id(g) not in self._globals:
            if g.space not in ("constant", "global"):
                raise caps.unsupported(_At(None), f"global `{g.name}` in the {g.space} space")
            vt = self.types.memory(g.value_type)
            init = _initializer(self, g)
            var = self.m.variable(self.m.type_pointer(STORAGE[g.space], vt), STORAGE[g.space],
                                  init)
            self.m.name(var, g.name)
            self._globals[id(g)] = var
        return self._globals[id(g)]

    # the program ------------------------------------------------------------------------
    def emit_program(self, program) -> bytes:
        headers = {}
        for fn in program.functions:
            headers[fn.name] = self._header(fn)
        emitters: dict[str, FnEmitter] = {}
        for fn in program.functions:
            spv_fn, params, prologue = headers[fn.name]
            em = FnEmitter(self, fn, spv_fn, params)
            if prologue is not None:
                em.dynamic_base, em.dynamic_base_type = prologue[1], prologue[2]
            em.emit_body(prologue[0] if prologue else None)
            emitters[fn.name] = em
        for k in program.kernels:
            self._entry(k, headers[k.name][0], emitters)
        return self.m.assemble()

    def _header(self, fn: Function):
        if not fn.is_kernel:
            ret = self.types.value(fn.ret, fn.span)
            spv = self.m.function(ret, [self.types.value(p.type, fn.span) for p in fn.params],
                                  name=fn.name)
            self.fn_ids[fn.name] = spv.id
            _name_params(self.m, fn, spv.params)
            return spv, list(spv.params), None
        abi = [_kernel_param_type(self.types, p.type, fn.span) for p in fn.params]
        dyn = dynamic_view_type(fn)
        dyn_type = None
        if dyn is not None:
            dyn_type = self.types.pointer(dyn, "workgroup", fn.span)
            abi.append(dyn_type)
        spv = self.m.function(self.types.void(), abi, name=fn.name)
        self.fn_ids[fn.name] = spv.id
        _name_params(self.m, fn, spv.params)
        hidden = spv.params[len(fn.params)] if dyn is not None else None
        if hidden is not None:
            self.m.name(hidden, "__dynamic_workgroup")

        def prologue(em: FnEmitter) -> None:
            for p, pid in zip(fn.params, spv.params):
                em.vals[id(p)] = _kernel_param_value(em, p.type, pid)
        return spv, list(spv.params), (prologue, hidden, dyn_type)

    def _entry(self, k: Function, spv_fn, emitters: dict[str, FnEmitter]) -> None:
        used: set[int] = set()
        seen: set[str] = set()
        todo = [k.name]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            em = emitters[name]
            used |= em.builtins_used
            todo.extend(c.name for c in em.callees)
        interface = [v for v in self._builtins.values() if v in used]
        self.m.entry_point("Kernel", spv_fn, k.symbol, interface)
        if k.block_shape:
            self.m.execution_mode(spv_fn, "LocalSize", *k.block_shape)
        if any(i.op == "math.rn" for i in k.instructions()):
            # tile arithmetic is never contracted (emit_tile.py)
            self.m.execution_mode(spv_fn, "ContractionOff")


def _reject_unknown_ops(module: IRModule) -> None:
    """Ops outside the IR table (future tensor ops, foreign frontends) are capability
    errors here, before the shared verifiers (which index the table) can trip on them."""
    for fn in module.functions.values():
        for ins in fn.instructions():
            if ins.op not in OPS:
                if caps.is_tensor_op(ins.op):
                    raise caps.unsupported(ins, f"tensor operation {ins.op} (no "
                                           "cooperative-matrix capability is enabled)")
                raise caps.unsupported(ins, f"unknown operation {ins.op}")


class _At:
    def __init__(self, span):
        self.span = span


def _name_params(m: Module, fn: Function, ids: list[int]) -> None:
    for p, pid in zip(fn.params, ids):
        m.name(pid, p.name)


def _kernel_param_type(types: TypeMap, t, span) -> int:
    if isinstance(t, PtrType) and t.space == "generic":
        return types.pointer(t.pointee, "global", span)
    if isinstance(t, BoolType):
        return types.int(8)
    return types.value(t, span)


def _kernel_param_value(em: FnEmitter, t, pid: int) -> int:
    if isinstance(t, PtrType) and t.space == "generic":
        return em.op("OpPtrCastToGeneric", em.types.value(t), pid)
    if isinstance(t, BoolType):
        return em.op("OpINotEqual", em.types.bool(), pid, em.c_int(8, 0))
    return pid


def dynamic_view_type(fn: Function):
    """The most strictly aligned element type among the kernel's dynamic workgroup views
    (first one wins a tie), or None when the kernel has none."""
    best = None
    for ins in fn.instructions():
        if ins.op == "gpu.dynamic_shared":
            elem = ins.type.pointee
            if best is None or elem.align > best.align:
                best = elem
    return best


def _initializer(ctx: Context, g: Global) -> int | None:
    """OpConstantNull for zero-initialised storage; scalar arrays/scalars from bytes."""
    vt = ctx.types.memory(g.value_type)
    if g.init is None:
        return ctx.m.const_null(vt)
    if isinstance(g.init, (bytes, bytearray)):
        return _const_from_bytes(ctx, g.value_type, bytes(g.init))
    raise caps.unsupported(_At(None), f"initializer of global `{g.name}` (addresses or "
                           "item lists)")


def _const_from_bytes(ctx: Context, t, data: bytes) -> int:
    if isinstance(t, ArrayType):
        step = t.elem.size
        parts = [_const_from_bytes(ctx, t.elem, data[i * step:(i + 1) * step])
                 for i in range(t.count)]
        return ctx.m.const_composite(ctx.types.memory(t), parts)
    data = data.ljust(t.size, b"\0")
    if isinstance(t, (IntType, BoolType)):
        return ctx.m.const(ctx.types.memory(t), int.from_bytes(data, "little"))
    if isinstance(t, FloatType):
        return ctx.m.const(ctx.types.memory(t), struct.unpack(
            "<f" if t.bits == 32 else "<d", data)[0])
    raise caps.unsupported(_At(None), f"a constant of type `{t}`")


assert _LOWERINGS  # importing the lowering modules registers their ops
register(tensor_reject.LOWER)  # tensor.mma/matmul/epilogue: explicit E0510 (gpu.md)
