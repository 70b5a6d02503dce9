"""IR types: scalars, pointers with address spaces, arrays, structs, void, function pointers.

Types are immutable and compare by value, so `ptr(F32, "global") == ptr(F32, "global")`.
Sizes and alignments are the natural C ones (LANGUAGE.md §2); bool is one byte in memory.
Address spaces are semantic (DESIGN.md layer 2): `generic` (host memory, or a device pointer
of unknown space), `global`, `workgroup`, `private`, `constant`.
"""
from __future__ import annotations

from ...records import dataclass

SPACES = ("generic", "global", "workgroup", "private", "constant")


class Type:
    size: int = 0
    align: int = 1

    @property
    def is_int(self) -> bool:
        return isinstance(self, IntType)

    @property
    def is_float(self) -> bool:
        return isinstance(self, FloatType)

    @property
    def is_ptr(self) -> bool:
        return isinstance(self, PtrType)

    @property
    def is_bool(self) -> bool:
        return isinstance(self, BoolType)

    @property
    def is_scalar(self) -> bool:
        return isinstance(self, (IntType, FloatType, BoolType, PtrType, FnPtrType))

    @property
    def is_aggregate(self) -> bool:
        return isinstance(self, (ArrayType, StructType))

    @property
    def is_vector(self) -> bool:
        return isinstance(self, VectorType)


@dataclass(frozen=True)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"

    @property
    def size(self) -> int:  # type: ignore[override]
        return 0


@dataclass(frozen=True)
class BoolType(Type):
    def __str__(self) -> str:
        return "bool"

    @property
    def size(self) -> int:  # type: ignore[override]
        return 1

    @property
    def align(self) -> int:  # type: ignore[override]
        return 1


@dataclass(frozen=True)
class IntType(Type):
    bits: int
    signed: bool

    def __str__(self) -> str:
        return f"{'i' if self.signed else 'u'}{self.bits}"

    @property
    def size(self) -> int:  # type: ignore[override]
        return self.bits // 8

    @property
    def align(self) -> int:  # type: ignore[override]
        return self.bits // 8

    def wrap(self, value: int) -> int:
        """Reduce a Python int to this type's range (two's complement)."""
        value &= (1 << self.bits) - 1
        if self.signed and value >> (self.bits - 1):
            value -= 1 << self.bits
        return value


@dataclass(frozen=True)
class FloatType(Type):
    bits: int

    def __str__(self) -> str:
        return f"f{self.bits}"

    @property
    def size(self) -> int:  # type: ignore[override]
        return self.bits // 8

    @property
    def align(self) -> int:  # type: ignore[override]
        return self.bits // 8


@dataclass(frozen=True)
class PtrType(Type):
    pointee: Type
    space: str = "generic"

    def __post_init__(self) -> None:
        if self.space not in SPACES:
            raise ValueError(f"unknown address space {self.space!r}")

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>" if self.space == "generic" else \
            f"ptr<{self.pointee}, {self.space}>"

    @property
    def size(self) -> int:  # type: ignore[override]
        return 8

    @property
    def align(self) -> int:  # type: ignore[override]
        return 8


@dataclass(frozen=True)
class FnPtrType(Type):
    params: tuple[Type, ...]
    ret: Type

    def __str__(self) -> str:
        return f"fn({', '.join(map(str, self.params))}) -> {self.ret}"

    @property
    def size(self) -> int:  # type: ignore[override]
        return 8

    @property
    def align(self) -> int:  # type: ignore[override]
        return 8


@dataclass(frozen=True)
class ArrayType(Type):
    elem: Type
    count: int

    def __str__(self) -> str:
        return f"[{self.count} x {self.elem}]"

    @property
    def size(self) -> int:  # type: ignore[override]
        return self.elem.size * self.count

    @property
    def align(self) -> int:  # type: ignore[override]
        return self.elem.align


@dataclass(frozen=True)
class VectorType(Type):
    """`vec<N x T>`: N (2 or 4) int or float scalars moved as one unit, the value of one
    combined load or store (opt/load_combine.py); aligned to its own size, like OpenCL's
    vector types, so a `vec<4 x f32>` access is one 128-bit transaction. Neither scalar
    nor aggregate: `vec.extract`/`vec.insert` reach its elements."""
    elem: Type
    count: int

    def __str__(self) -> str:
        return f"vec<{self.count} x {self.elem}>"

    @property
    def size(self) -> int:  # type: ignore[override]
        return self.elem.size * self.count

    @property
    def align(self) -> int:  # type: ignore[override]
        return self.size


@dataclass(frozen=True)
class StructType(Type):
    """A named struct. `fields` is a tuple of (name, type); layout is C-natural."""
    name: str
    fields: tuple[tuple[str, Type], ...]

    def __str__(self) -> str:
        return f"%{self.name}"

    @property
    def offsets(self) -> tuple[int, ...]:
        out, off = [], 0
        for _, t in self.fields:
            off = align_up(off, t.align)
            out.append(off)
            off += t.size
        return tuple(out)

    @property
    def align(self) -> int:  # type: ignore[override]
        return max((t.align for _, t in self.fields), default=1)

    @property
    def size(self) -> int:  # type: ignore[override]
        if not self.fields:
            return 0
        last = self.offsets[-1] + self.fields[-1][1].size
        return align_up(last, self.align)

    def field_index(self, name: str) -> int:
        for i, (n, _) in enumerate(self.fields):
            if n == name:
                return i
        raise KeyError(name)


def align_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


VOID = VoidType()
BOOL = BoolType()
I8, I16, I32, I64 = (IntType(b, True) for b in (8, 16, 32, 64))
U8, U16, U32, U64 = (IntType(b, False) for b in (8, 16, 32, 64))
F32, F64 = FloatType(32), FloatType(64)
SCALARS = {str(t): t for t in (BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64)}


def ptr(pointee: Type, space: str = "generic") -> PtrType:
    return PtrType(pointee, space)


def int_type(bits: int, signed: bool) -> IntType:
    return IntType(bits, signed)
