"""Hand-built SPIR-V kernels for the infrastructure tests (built only through module.py)."""
from __future__ import annotations

from toolchain.compiler.targets.spirv import _grammar as G
from toolchain.compiler.targets.spirv.module import Module


def vadd_module(local_size: tuple[int, int, int] | None = None) -> Module:
    """vadd(a, b, c): c[i] = a[i] + b[i], i = GlobalInvocationId.x (OpenCL 2.0 profile:
    Kernel, Physical64, CrossWorkgroup float pointers, the builtin loaded from Input)."""
    m = Module(addressing="Physical64", memory_model="OpenCL")
    void, f32, u64 = m.type_void(), m.type_float(32), m.type_int(64)
    v3 = m.type_vector(u64, 3)
    gid = m.variable(m.type_pointer("Input", v3), "Input")
    m.decorate(gid, "BuiltIn", "GlobalInvocationId")
    m.decorate(gid, "Constant")
    m.name(gid, "global_id")
    gptr = m.type_pointer("CrossWorkgroup", f32)
    fn = m.function(void, [gptr, gptr, gptr], name="vadd")
    for param, pname in zip(fn.params, "abc"):
        m.name(param, pname)
    blk = fn.block()
    ids = blk.op("OpLoad", v3, gid, "Aligned", 32)
    i = blk.op("OpCompositeExtract", u64, ids, 0)
    pa, pb, pc = (blk.op("OpInBoundsPtrAccessChain", gptr, p, i) for p in fn.params)
    a = blk.op("OpLoad", f32, pa, "Aligned", 4)
    b = blk.op("OpLoad", f32, pb, "Aligned", 4)
    blk.op("OpStore", pc, blk.op("OpFAdd", f32, a, b), "Aligned", 4)
    blk.op("OpReturn")
    m.entry_point("Kernel", fn, "vadd", [gid])
    if local_size:
        m.execution_mode(fn, "LocalSize", *local_size)
    return m


def scaled_sum_module() -> Module:
    """scaled_sum(x, out, scratch, n, k): every work-item writes its value k*x[i] (i < n) into
    a local-memory scratch argument, barriers, then out[i] = scratch[l] + scratch[L-1-l]
    where l is the local id and L the work-group size: exercises scalar and local-memory
    arguments, OpControlBarrier, branches and an OpenCL.std call (fabs)."""
    m = Module()
    void, f32, u32, u64 = m.type_void(), m.type_float(32), m.type_int(32), m.type_int(64)
    v3 = m.type_vector(u64, 3)
    std = m.ext_inst_import("OpenCL.std")
    gvar = m.variable(m.type_pointer("Input", v3), "Input")
    lvar = m.variable(m.type_pointer("Input", v3), "Input")
    svar = m.variable(m.type_pointer("Input", v3), "Input")
    for var, builtin in ((gvar, "GlobalInvocationId"), (lvar, "LocalInvocationId"),
                         (svar, "WorkgroupSize")):
        m.decorate(var, "BuiltIn", builtin)
        m.decorate(var, "Constant")
    gptr, lptr = m.type_pointer("CrossWorkgroup", f32), m.type_pointer("Workgroup", f32)
    fn = m.function(void, [gptr, gptr, lptr, u32, f32], name="scaled_sum")
    x, out, scratch, n, k = fn.params
    entry, body, done = fn.block(), fn.block(), fn.block()
    gi = entry.op("OpCompositeExtract", u64, entry.op("OpLoad", v3, gvar), 0)
    li = entry.op("OpCompositeExtract", u64, entry.op("OpLoad", v3, lvar), 0)
    size = entry.op("OpCompositeExtract", u64, entry.op("OpLoad", v3, svar), 0)
    xi = entry.op("OpLoad", f32, entry.op("OpInBoundsPtrAccessChain", gptr, x, gi))
    val = entry.op("OpExtInst", f32, std, "fabs", entry.op("OpFMul", f32, xi, k))
    entry.op("OpStore", entry.op("OpPtrAccessChain", lptr, scratch, li), val)
    sem = G.ENUMERANTS["MemorySemantics"]
    sem_bits = m.const(u32, sem["AcquireRelease"][0] | sem["WorkgroupMemory"][0])
    wg = m.const(u32, G.ENUMERANTS["Scope"]["Workgroup"][0])
    entry.op("OpControlBarrier", wg, wg, sem_bits)
    in_range = entry.op("OpULessThan", m.type_bool(), gi, entry.op("OpUConvert", u64, n))
    entry.op("OpBranchConditional", in_range, body.id, done.id)
    mirror = body.op("OpISub", u64, body.op("OpISub", u64, size, m.const(u64, 1)), li)
    s0 = body.op("OpLoad", f32, body.op("OpPtrAccessChain", lptr, scratch, li))
    s1 = body.op("OpLoad", f32, body.op("OpPtrAccessChain", lptr, scratch, mirror))
    body.op("OpStore", body.op("OpInBoundsPtrAccessChain", gptr, out, gi),
            body.op("OpFAdd", f32, s0, s1))
    body.op("OpBranch", done.id)
    done.op("OpReturn")
    m.entry_point("Kernel", fn, "scaled_sum", [gvar, lvar, svar])
    return m

