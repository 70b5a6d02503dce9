"""IR types -> PTX register classes, instruction type suffixes and immediates.

Register classes: %p (pred, for bool), %rs (.b16), %r (.b32), %rd (.b64: 64-bit integers and
every pointer), %f (.f32), %fd (.f64). PTX has no 8-bit registers, so i8/u8 live in %rs.
Invariant of that widening: an 8-bit value in a 16-bit register is always *normalized*,
i.e. sign-extended (i8) or zero-extended (u8) to 16 bits. Loads establish it (`ld.s8` /
`ld.u8` extend), `cvt` to an 8-bit format re-establishes it, and the arithmetic lowering
renormalizes after every operation that can carry out of bit 7 (add/sub/mul/shl/neg/not).
With that invariant, 16-bit compare/div/rem/shr/min/max give the 8-bit answers.
"""
from __future__ import annotations

import struct

from ...ir.types import BoolType, FloatType, FnPtrType, IntType, PtrType, Type

# class -> (register prefix, declaration type)
CLASSES = {"p": ("%p", ".pred"), "rs": ("%rs", ".b16"), "r": ("%r", ".b32"),
           "rd": ("%rd", ".b64"), "f": ("%f", ".f32"), "fd": ("%fd", ".f64")}
CLASS_ORDER = ("p", "rs", "r", "rd", "f", "fd")
_INT_CLASS = {8: "rs", 16: "rs", 32: "r", 64: "rd"}
_CLASS_BITS = {"p": 1, "rs": 16, "r": 32, "rd": 64, "f": 32, "fd": 64}


def rclass(t: Type) -> str:
    if isinstance(t, BoolType):
        return "p"
    if isinstance(t, IntType):
        return _INT_CLASS[t.bits]
    if isinstance(t, FloatType):
        return "f" if t.bits == 32 else "fd"
    if isinstance(t, (PtrType, FnPtrType)):
        return "rd"
    raise KeyError(str(t))


def is_small_int(t: Type) -> bool:
    return isinstance(t, IntType) and t.bits == 8


def reg_bits(t: Type) -> int:
    """Width of the register holding `t` (8-bit values sit in 16-bit registers)."""
    return _CLASS_BITS[rclass(t)]


def arith(t: Type) -> str:
    """Type suffix for arithmetic on register values (8-bit ints compute as 16-bit)."""
    if isinstance(t, IntType):
        return f"{'s' if t.signed else 'u'}{max(t.bits, 16)}"
    if isinstance(t, FloatType):
        return f"f{t.bits}"
    if isinstance(t, (PtrType, FnPtrType)):
        return "u64"
    raise KeyError(str(t))


_UNTYPED = {16: "b16", 32: "b32", 64: "b64"}
_SIGNED = {16: "s16", 32: "s32", 64: "s64"}


def untyped(t: Type) -> str:
    """The untyped format of `t`'s (non-predicate) register, .b16/.b32/.b64, floats
    included: for not/and/or/xor, shl and raw bit moves."""
    return _UNTYPED[_CLASS_BITS[rclass(t)]]


def signed(t: Type) -> str:
    """The signed integer format of `t`'s register width (for neg)."""
    return _SIGNED[_CLASS_BITS[rclass(t)]]


def bits(t: Type) -> str:
    """Untyped suffix for moves/selects/bitwise ops: .b16/.b32/.b64 (f32/f64 keep theirs)."""
    if isinstance(t, FloatType):
        return f"f{t.bits}"
    return f"b{reg_bits(t)}"


def exact(t: Type) -> str:
    """The exact format of `t`, 8-bit formats included (for cvt and memory access)."""
    if isinstance(t, IntType):
        return f"{'s' if t.signed else 'u'}{t.bits}"
    if isinstance(t, BoolType):
        return "u8"
    return arith(t)


def param_type(t: Type, entry: bool) -> str:
    """`.param` type: natural width for kernel params; .func params widen bool to .b32."""
    return "." + param_format(t, entry)


def param_format(t: Type, entry: bool) -> str:
    """`param_type` without its dot: the type of the `ld.param` that reads the parameter."""
    if isinstance(t, BoolType):
        return "u8" if entry else "b32"
    if entry:
        return exact(t)
    if isinstance(t, FloatType):
        return f"f{t.bits}"
    return f"b{reg_bits(t)}"


def param_decl(t: Type, name: str, entry: bool) -> str:
    """The `.param` declaration of parameter/result slot `name`: a scalar's type, or an
    aggregate's byte array (`.param .align A .b8 name[size]`, the PTX ABI's by-value
    struct, as nvcc writes it)."""
    if t.is_aggregate:
        return f".param .align {max(t.align, 1)} .b8 {name}[{max(t.size, 1)}]"
    return f".param {param_type(t, entry)} {name}"


def imm(t: Type, value) -> str:
    """A PTX immediate for a constant of type `t`."""
    if isinstance(t, FloatType):
        if t.bits == 32:
            return "0f%08X" % struct.unpack("<I", struct.pack("<f", float(value)))[0]
        return "0d%016X" % struct.unpack("<Q", struct.pack("<d", float(value)))[0]
    if isinstance(t, BoolType):
        return "1" if value else "0"
    if isinstance(t, IntType):
        return str(t.wrap(int(value)))
    return str(int(value or 0))
