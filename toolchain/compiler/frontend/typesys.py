"""Mettle's type system expressed in IR types (LANGUAGE §2).

Semantic types ARE IR types: intN/uintN -> I*/U*, float32/64 -> F32/F64, bool -> BOOL,
`T*` -> ptr(T), cstring -> ptr(U8), `string` -> STRING (16-byte {chars, length}), `T[N]` ->
ArrayType, structs -> StructType (C layout), plain enums -> I64 (the enum identity is kept
on symbols, not in the type, so IR type equality stays exact).

Invariants:
- Pointer types compare with their address space; `same_ignoring_space` is the semantic
  comparison (device lowering picks the space, the language does not spell it).
- A struct that points to itself is built with a field-less placeholder StructType of the
  same name; `StructTable.full` maps any struct back to its complete definition.

Arithmetic rule (the spec has no C integer promotions): a binary operation on two integers
runs in the wider operand type; at equal width, unsigned wins. Untyped literals adopt the
other operand's type. int with float gives the float type; float32 with float64 gives float64.
"""
from __future__ import annotations

from ..ir.types import (BOOL, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, VOID,
                        ArrayType, FnPtrType, IntType, PtrType, StructType, Type, ptr)

STRING = StructType("string", (("chars", ptr(U8)), ("length", U64)))
CSTRING = ptr(U8)

BUILTIN_TYPES: dict[str, Type] = {
    "int8": I8, "int16": I16, "int32": I32, "int64": I64,
    "uint8": U8, "uint16": U16, "uint32": U32, "uint64": U64,
    "float32": F32, "float64": F64, "bool": BOOL, "void": VOID,
    "string": STRING, "cstring": CSTRING,
}
_NAMES = {v: k for k, v in BUILTIN_TYPES.items() if k != "cstring"}


def describe(t: Type) -> str:
    """The Mettle spelling of a type, for diagnostics."""
    if t in _NAMES:
        return _NAMES[t]
    if isinstance(t, PtrType):
        return describe(t.pointee) + "*"
    if isinstance(t, ArrayType):
        return f"{describe(t.elem)}[{t.count}]"
    if isinstance(t, StructType):
        return t.name
    if isinstance(t, FnPtrType):
        ret = "" if t.ret == VOID else f" -> {describe(t.ret)}"
        return f"fn({', '.join(map(describe, t.params))}){ret}"
    return str(t)


def is_numeric(t: Type) -> bool:
    return t.is_int or t.is_float


def is_scalar_numeric(t: Type) -> bool:
    return t.is_int or t.is_float


def same_ignoring_space(a: Type, b: Type) -> bool:
    if isinstance(a, PtrType) and isinstance(b, PtrType):
        return same_ignoring_space(a.pointee, b.pointee)
    if isinstance(a, StructType) and isinstance(b, StructType):
        return a.name == b.name
    return a == b


def with_space(t: Type, space: str) -> Type:
    return ptr(t.pointee, space) if isinstance(t, PtrType) else t


def arith_result(a: Type, b: Type) -> Type | None:
    """The operation type of a binary arithmetic op on a and b (see module doc)."""
    if a.is_bool:
        a = I32
    if b.is_bool:
        b = I32
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.is_int and b.is_int:
        if a.bits != b.bits:
            return a if a.bits > b.bits else b
        return a if not a.signed else b
    return None


def literal_type(value: int) -> IntType:
    """Default type of an untyped integer constant: int32, or int64 when it does not fit."""
    return I32 if -(1 << 31) <= value < (1 << 32) else I64


class StructTable:
    """Struct name -> complete StructType (placeholders resolve through here)."""

    def __init__(self) -> None:
        self.by_name: dict[str, StructType] = {}

    def full(self, t: Type) -> Type:
        if isinstance(t, StructType) and t.name in self.by_name:
            return self.by_name[t.name]
        return t
