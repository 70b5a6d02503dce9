"""The tester's own model of Mettle's host types and arithmetic typing (LANGUAGE §2, §12.9,
§12.10), kept independent of the compiler's typesys on purpose: the generator uses it to
avoid undefined behaviour (shift amounts, divisors) and the C printer uses it to state the
same types in C. A type is a string: `int8`..`uint64`, `float32`, `float64`, a struct name.
"""
from __future__ import annotations

INTS = {"int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
        "uint8": (8, False), "uint16": (16, False), "uint32": (32, False),
        "uint64": (64, False)}
FLOATS = {"float32": 32, "float64": 64}
C_NAMES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
           "uint64": "uint64_t", "float32": "float", "float64": "double"}


def is_int(t: str) -> bool:
    return t in INTS


def is_float(t: str) -> bool:
    return t in FLOATS


def bits(t: str) -> int:
    return INTS[t][0] if t in INTS else FLOATS[t]


def wrap(v: int, t: str) -> int:
    b, signed = INTS[t]
    v &= (1 << b) - 1
    return v - (1 << b) if signed and v >> (b - 1) else v


def promote(t: str) -> str:
    """C integer promotion: narrower than 32 bits becomes int32."""
    return "int32" if t in INTS and INTS[t][0] < 32 else t


def literal_type(v: int) -> str:
    """§12.9: an integer literal is int32 when it fits, else int64, else uint64."""
    if -(1 << 31) <= v < (1 << 31):
        return "int32"
    return "int64" if -(1 << 63) <= v < (1 << 63) else "uint64"


def arith(a: str, b: str) -> str:
    """The operation type of a binary arithmetic operator (C's usual conversions, LP64)."""
    if is_float(a) or is_float(b):
        if is_float(a) and is_float(b):
            return a if bits(a) >= bits(b) else b
        return a if is_float(a) else b
    a, b = promote(a), promote(b)
    if bits(a) != bits(b):
        return a if bits(a) > bits(b) else b
    return a if not INTS[a][1] else b
