"""IR types -> SPIR-V type ids for the OpenCL 2.0 (Kernel, Physical64) profile.

Invariants:
  * Every integer type is OpTypeInt with signedness 0 (OpenCL modules must not use signed
    integer types); signedness lives in the opcodes chosen by the emitters, so `i32` and
    `u32` share one id and a convert between them is no instruction at all.
  * bool has two forms: the value form is OpTypeBool; the memory form (anything stored:
    pointees, locals, struct members, array elements) is an 8-bit integer, because OpenCL
    gives bool no storage layout (and IR bool is one byte in memory). Loads and stores
    of bool convert between the two forms.
  * IR address spaces map to storage classes: global -> CrossWorkgroup, workgroup ->
    Workgroup, private -> Function (allocas AND gpu.alloc private arrays: the Private
    storage class needs the Shader capability, which `spirv-val --target-env opencl2.0`
    rejects, and Function variables are per work-item), generic -> Generic, constant ->
    UniformConstant.
  * Types SPIR-V for OpenCL cannot hold (function pointers, void values in memory) raise
    E0510 at the span given by the caller.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.types import (ArrayType, BoolType, FloatType, FnPtrType, IntType, PtrType,
                         StructType, Type, VectorType, VoidType)
from .module import Module

STORAGE = {"global": "CrossWorkgroup", "workgroup": "Workgroup", "private": "Function",
           "generic": "Generic", "constant": "UniformConstant"}


class TypeMap:
    """Caches IR type -> SPIR-V id (value and memory forms) for one module."""

    def __init__(self, m: Module):
        self.m = m
        self._value: dict[Type, int] = {}
        self._memory: dict[Type, int] = {}

    # scalars used directly by emitters ------------------------------------------------
    def int(self, bits: int) -> int:
        return self.m.type_int(bits, 0)

    def u32(self) -> int:
        return self.m.type_int(32, 0)

    def u64(self) -> int:
        return self.m.type_int(64, 0)

    def f32(self) -> int:
        return self.m.type_float(32)

    def bool(self) -> int:
        return self.m.type_bool()

    def void(self) -> int:
        return self.m.type_void()

    # IR types ---------------------------------------------------------------------------
    def value(self, t: Type, span=None) -> int:
        """The SSA value type of an IR type (bool stays OpTypeBool)."""
        if t not in self._value:
            self._value[t] = self._build(t, span, memory=False)
        return self._value[t]

    def memory(self, t: Type, span=None) -> int:
        """The in-memory representation of an IR type (bool becomes an 8-bit integer)."""
        if t not in self._memory:
            self._memory[t] = self._build(t, span, memory=True)
        return self._memory[t]

    def pointer(self, pointee: Type, space: str, span=None) -> int:
        return self.m.type_pointer(STORAGE[space], self.memory(pointee, span))

    def _build(self, t: Type, span, memory: bool) -> int:
        if isinstance(t, BoolType):
            return self.int(8) if memory else self.bool()
        if isinstance(t, IntType):
            return self.int(t.bits)
        if isinstance(t, FloatType):
            return self.m.type_float(t.bits)
        if isinstance(t, VoidType):
            return self.int(8) if memory else self.void()
        if isinstance(t, PtrType):
            return self.pointer(t.pointee, t.space, span)
        if isinstance(t, ArrayType):
            return self.m.type_array(self.memory(t.elem, span), t.count)
        if isinstance(t, VectorType):
            return self.m.type_vector(self.memory(t.elem, span), t.count)
        if isinstance(t, StructType):
            return self._struct(t, span)
        if isinstance(t, FnPtrType):
            raise error("E0510", f"function pointer type `{t}` cannot be represented in "
                        "OpenCL SPIR-V (no indirect calls on this target)", span)
        raise error("E0510", f"type `{t}` cannot be represented in OpenCL SPIR-V", span)

    def _struct(self, t: StructType, span) -> int:
        members = [self.memory(ft, span) for _, ft in t.fields]
        # Member types give natural C layout under Physical64 addressing (no Offset
        # decorations needed); a struct with no members still needs a size, so pad it.
        if not members:
            members = [self.int(8)]
        return self.m._unique("OpTypeStruct", *members)


def is_bool(t: Type) -> bool:
    return isinstance(t, BoolType)
