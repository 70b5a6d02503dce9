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

Arithmetic rule (LANGUAGE §12.10, C's usual arithmetic conversions on LP64): integer operands
narrower than 32 bits (and bool) are first promoted to int32; then a binary operation runs in
the wider operand type, and at equal width unsigned wins. int with float gives the float type;
float32 with float64 gives float64. An untyped integer literal takes part with the type
`literal_type` gives it (so `u8 + 300` is int32 and `i32 + 3000000000` is int64); an untyped
float literal adopts the other operand's float type (§12.9), else it is float64.
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

# The source spelling of each generic instance's mangled name (`Box__int64` -> `Box<int64>`),
# filled by the monomorphizer (generics.py): diagnostics show what the user wrote.
INSTANCE_SPELLING: dict[str, str] = {}


def describe(t: Type) -> str:
    """The Mettle spelling of a type, for diagnostics."""
    if t in _NAMES:
        return _NAMES[t]
    if isinstance(t, PtrType):
        code = closure_sig(t)
        if code is not None:
            return f"Fn({', '.join(map(describe, code.params[1:]))}) -> {describe(code.ret)}"
        return _operand(t.pointee) + "*"
    if isinstance(t, ArrayType):
        return f"{_operand(t.elem)}[{t.count}]"
    if isinstance(t, StructType):
        return INSTANCE_SPELLING.get(t.name, t.name)
    if isinstance(t, FnPtrType):
        ret = "" if t.ret == VOID else f" -> {describe(t.ret)}"
        return f"fn({', '.join(map(describe, t.params))}){ret}"
    return str(t)


def closure_sig(t):
    """The code pointer type of a closure type (a pointer to its `Fn.` record header,
    closures.py), else None."""
    if isinstance(t, PtrType) and isinstance(t.pointee, StructType) and \
            t.pointee.name.startswith("Fn.") and len(t.pointee.fields) == 1:
        code = t.pointee.fields[0][1]
        return code if isinstance(code, FnPtrType) else None
    return None


def _operand(t: Type) -> str:
    """describe() of a pointer's or array's element: a function type (a thin pointer, or a
    closure) in parentheses, as the source spells it."""
    s = describe(t)
    return f"({s})" if isinstance(t, FnPtrType) or closure_sig(t) is not None else s


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


def promote(t: Type) -> Type:
    """C integer promotion: bool and integers narrower than 32 bits become int32."""
    if t.is_bool or (t.is_int and t.bits < 32):
        return I32
    return t


def arith_result(a: Type, b: Type) -> Type | None:
    """The operation type of a binary arithmetic op on a and b (see module doc)."""
    a, b = promote(a), promote(b)
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
    """Type of an untyped integer constant (§12.9, literals never wrap): int32 when it fits,
    else int64, else uint64."""
    if -(1 << 31) <= value < (1 << 31):
        return I32
    return I64 if -(1 << 63) <= value < (1 << 63) else U64


class StructTable:
    """Struct name -> complete StructType (placeholders resolve through here)."""

    def __init__(self) -> None:
        self.by_name: dict[str, StructType] = {}

    def full(self, t: Type) -> Type:
        if isinstance(t, StructType) and t.name in self.by_name:
            return self.by_name[t.name]
        return t
