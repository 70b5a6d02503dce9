"""Memory, addresses, locals, static/dynamic storage, index built-ins and 128-bit vectors.

- load/store carry `Aligned <natural alignment>`; bool is an 8-bit integer in memory, so a
  bool load is `!= 0` and a bool store selects 1/0.
- ptradd -> OpPtrAccessChain with the i64 index (not InBounds: C code may form a pointer
  one past or before an object and LLVM's inbounds would make that undefined); byteadd
  goes through a uchar pointer of the same storage class; fieldptr -> OpInBoundsAccessChain
  with a u32 member index.
- Locals and allocas are Function-storage OpVariables in the entry block.
- gpu.alloc workgroup -> a module-scope Workgroup array variable (one per op, 16-byte
  aligned for vec.load4); gpu.alloc private -> a Function-storage array in the kernel's
  entry block (per work-item storage; see types_map.py for why not Private), also
  decorated 16-byte aligned: the IR promises every gpu.alloc that (opt/pointer_facts.py).
- gpu.dynamic_shared -> the kernel's hidden Workgroup pointer parameter (emit.py), bitcast
  to each view's element type.
- gpu.index -> the LocalInvocationId/WorkgroupId/WorkgroupSize/NumWorkgroups Input
  variable (vec3 of 64-bit size_t), OpCompositeExtract of the axis, OpUConvert to u32.
- ptrtoint/inttoptr go through 64 bits (OpConvertPtrToU/OpConvertUToPtr); addrspacecast
  uses OpPtrCastToGeneric / OpGenericCastToPtr (named -> named goes through Generic).
- vec.load4/store4: one OpLoad/OpStore of a 4-vector with Aligned 16, 32-bit elements.
- a load/store of an IR `vec<N x T>` is one OpLoad/OpStore of an OpTypeVector (Aligned to
  the vector's size) through the bitcast vector pointer; vec.extract/vec.insert are
  OpCompositeExtract/OpCompositeInsert.
"""
from __future__ import annotations

from ...ir.types import U8, ArrayType, BoolType, IntType, PtrType
from . import capabilities as caps
from .emit_arith import convert_value
from .emit_function import register
from .types_map import STORAGE

_INDEX = {"thread": "LocalInvocationId", "block": "WorkgroupId",
          "block_dim": "WorkgroupSize", "grid_dim": "NumWorkgroups"}
WORKGROUP_ALIGN = 16


def load_value(em, p, t, align: int | None = None) -> int:
    """Load an IR value of type `t` through pointer operand id `p`."""
    mt = em.types.memory(t)
    raw = em.op("OpLoad", mt, p, "Aligned", align or max(t.align, 1))
    if isinstance(t, BoolType):
        return em.op("OpINotEqual", em.types.bool(), raw, em.c_int(8, 0))
    return raw


def store_value(em, p, t, vid: int, align: int | None = None) -> None:
    if isinstance(t, BoolType):
        vid = em.op("OpSelect", em.types.int(8), vid, em.c_int(8, 1), em.c_int(8, 0))
    em.op("OpStore", p, vid, "Aligned", align or max(t.align, 1))


def _pointee(ins, p):
    if not isinstance(p.type, PtrType):
        raise caps.bad_operand(ins, f"a pointer operand is needed, got {p.type}")
    return p.type.pointee


def lower_load(em, ins) -> None:
    (p,) = ins.operands
    _pointee(ins, p)
    em.define(ins, load_value(em, em.val(p), ins.type))


def lower_store(em, ins) -> None:
    p, v = ins.operands
    store_value(em, em.val(p), v.type, em.val(v))


def element_ptr(em, p_id: int, ptr_type, index_id: int) -> int:
    return em.op("OpPtrAccessChain", em.types.value(ptr_type), p_id, index_id)


def lower_ptradd(em, ins) -> None:
    p, idx = ins.operands
    em.define(ins, element_ptr(em, em.val(p), ins.type, em.val(idx)))


def lower_byteadd(em, ins) -> None:
    p, off = ins.operands
    bytes_t = PtrType(U8, p.type.space)
    raw = em.op("OpBitcast", em.types.value(bytes_t), em.val(p))
    moved = element_ptr(em, raw, bytes_t, em.val(off))
    em.define(ins, em.op("OpBitcast", em.types.value(ins.type), moved))


def lower_fieldptr(em, ins) -> None:
    (p,) = ins.operands
    em.define(ins, em.op("OpInBoundsAccessChain", em.types.value(ins.type, ins.span),
                         em.val(p), em.c_u32(int(ins.attrs["index"]))))


def lower_alloca(em, ins) -> None:
    t = ins.attrs["type"]
    var = em.temp_var(em.types.memory(t, ins.span))
    em.define(ins, var)


def lower_local_get(em, ins) -> None:
    (loc,) = ins.operands
    em.define(ins, load_value(em, em.local_var(loc), loc.type))


def lower_local_set(em, ins) -> None:
    loc, v = ins.operands
    store_value(em, em.local_var(loc), loc.type, em.val(v))


def lower_memcpy(em, ins) -> None:
    dst, src = ins.operands
    em.op("OpCopyMemorySized", em.val(dst), em.val(src), em.c_u64(int(ins.attrs["size"])))


def _first_element(em, var: int, ins) -> int:
    return em.op("OpInBoundsAccessChain", em.types.value(ins.type), var, em.c_u32(0))


def lower_gpu_alloc(em, ins) -> None:
    elem, count = ins.attrs["elem"], int(ins.attrs["count"])
    arr = em.types.memory(ArrayType(elem, count), ins.span)
    if ins.attrs["space"] == "workgroup":
        var = em.m.variable(em.m.type_pointer("Workgroup", arr), "Workgroup")
        em.m.decorate(var, "Alignment", max(WORKGROUP_ALIGN, elem.align))
        if ins.attrs.get("name"):
            em.m.name(var, f"{em.fn.name}.{ins.attrs['name']}")
    else:
        var = em.temp_var(arr)
        em.m.decorate(var, "Alignment", max(WORKGROUP_ALIGN, elem.align))
    em.define(ins, _first_element(em, var, ins))


def lower_dynamic_shared(em, ins) -> None:
    if em.dynamic_base is None:
        raise caps.unsupported(ins, "a launch-sized workgroup view outside a kernel")
    target = em.types.value(ins.type, ins.span)
    base = em.dynamic_base
    em.define(ins, base if em.dynamic_base_type == target else
              em.op("OpBitcast", target, base))


def lower_index(em, ins) -> None:
    u64 = em.types.u64()
    v3 = em.m.type_vector(u64, 3)
    var = em.builtin(_INDEX[ins.attrs["kind"]], v3)
    vec = em.op("OpLoad", v3, var)
    lane = em.op("OpCompositeExtract", u64, vec, "xyz".index(ins.attrs["axis"]))
    em.define(ins, em.op("OpUConvert", em.types.u32(), lane))


def lower_ptrtoint(em, ins) -> None:
    (p,) = ins.operands
    if not isinstance(p.type, PtrType):
        raise caps.unsupported(ins, f"ptrtoint of {p.type}")
    wide = em.op("OpConvertPtrToU", em.types.u64(), em.val(p))
    em.define(ins, convert_value(em, wide, IntType(64, False), ins.type))


def lower_inttoptr(em, ins) -> None:
    (a,) = ins.operands
    if not isinstance(ins.type, PtrType):
        raise caps.unsupported(ins, f"inttoptr to {ins.type}")
    wide = convert_value(em, em.val(a), a.type, IntType(64, a.type.signed))
    em.define(ins, em.op("OpConvertUToPtr", em.types.value(ins.type), wide))


def cast_space(em, ins, pid: int, pointee, src: str, dst: str) -> int:
    if src == dst:
        return pid
    if "constant" in (src, dst):
        raise caps.unsupported(ins, f"a cast between the {src} and {dst} address spaces")
    if src != "generic":
        pid = em.op("OpPtrCastToGeneric", em.types.pointer(pointee, "generic"), pid)
    if dst != "generic":
        pid = em.op("OpGenericCastToPtr", em.types.pointer(pointee, dst), pid)
    return pid


def lower_addrspacecast(em, ins) -> None:
    (p,) = ins.operands
    em.define(ins, cast_space(em, ins, em.val(p), p.type.pointee, p.type.space,
                              ins.type.space))


def _vec4(em, ins, p):
    t = _pointee(ins, p)
    if isinstance(t, BoolType) or not hasattr(t, "bits") or t.bits != 32:
        raise caps.bad_operand(ins, f"vector load/store needs 32-bit elements, got {t}")
    vec = em.m.type_vector(em.types.memory(t), 4)
    return t, vec, em.m.type_pointer(STORAGE[p.type.space], vec)


def lower_vec_load4(em, ins) -> None:
    src, dst = ins.operands
    t, vec, vptr = _vec4(em, ins, src)
    v = em.op("OpLoad", vec, em.op("OpBitcast", vptr, em.val(src)), "Aligned", 16)
    d = em.val(dst)
    for i in range(4):
        lane = em.op("OpCompositeExtract", em.types.memory(t), v, i)
        at = d if i == 0 else element_ptr(em, d, dst.type, em.c_u64(i))
        em.op("OpStore", at, lane, "Aligned", t.align)


def lower_vec_store4(em, ins) -> None:
    dst, src = ins.operands
    t, vec, vptr = _vec4(em, ins, dst)
    s = em.val(src)
    lanes = []
    for i in range(4):
        at = s if i == 0 else element_ptr(em, s, src.type, em.c_u64(i))
        lanes.append(em.op("OpLoad", em.types.memory(t), at, "Aligned", t.align))
    v = em.op("OpCompositeConstruct", vec, *lanes)
    em.op("OpStore", em.op("OpBitcast", vptr, em.val(dst)), v, "Aligned", 16)


def lower_vec_extract(em, ins) -> None:
    em.define(ins, em.op("OpCompositeExtract", em.types.value(ins.type), em.val(ins.operands[0]),
                         int(ins.attrs["index"])))


def lower_vec_insert(em, ins) -> None:
    vec, value = ins.operands
    em.define(ins, em.op("OpCompositeInsert", em.types.value(ins.type), em.val(value),
                         em.val(vec), int(ins.attrs["index"])))


register({
    "vec.extract": lower_vec_extract, "vec.insert": lower_vec_insert,
    "load": lower_load, "store": lower_store, "ptradd": lower_ptradd,
    "byteadd": lower_byteadd, "fieldptr": lower_fieldptr, "alloca": lower_alloca,
    "local.get": lower_local_get, "local.set": lower_local_set, "memcpy": lower_memcpy,
    "gpu.alloc": lower_gpu_alloc, "gpu.dynamic_shared": lower_dynamic_shared,
    "gpu.index": lower_index, "ptrtoint": lower_ptrtoint, "inttoptr": lower_inttoptr,
    "addrspacecast": lower_addrspacecast, "vec.load4": lower_vec_load4,
    "vec.store4": lower_vec_store4,
})
