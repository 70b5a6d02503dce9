"""SPIR-V binary decoder and disassembler (text in the style of `spirv-dis --raw-id`).

`decode(data)` returns the header and one `Instruction` per instruction, walking the same
generated operand tables as the encoder, so `encoder.encode(i.opname, i.args(), i.result)`
reproduces each instruction's words exactly (tests check that round trip).
`disassemble(data)` renders:
    ; SPIR-V / ; Version: 1.0 / ; Generator: 0 / ; Bound: 22 / ; Schema: 0
    OpCapability Kernel
    %5 = OpTypeInt 32 0
    %9 = OpConstant %5 7
    OpStore %18 %21 Aligned 4
Ids print as %N, enumerants by name (bitmasks joined with |), strings quoted with JSON
escapes, OpConstant literals by the value their type gives them (floats included).
Malformed input raises `DecodeError` with the word offset; it never reads past the end.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from . import _grammar as G
from .encoder import Words


class DecodeError(ValueError):
    pass


@dataclass(frozen=True)
class Id:
    value: int

    def __str__(self) -> str:
        return f"%{self.value}"


@dataclass
class Instruction:
    opname: str
    result: int | None
    operands: list = field(default_factory=list)  # Id | int | str | Words, in grammar order
    shown: list[str] = field(default_factory=list)  # one display token per operand

    def args(self) -> tuple:
        """Operands in the form `encoder.encode` takes (ids as ints)."""
        return tuple(o.value if isinstance(o, Id) else o for o in self.operands)

    def __str__(self) -> str:
        text = " ".join([self.opname, *self.shown])
        return text if self.result is None else f"%{self.result} = {text}"


class _Reader:
    def __init__(self, words: list[int], start: int, end: int, types: dict[int, tuple]):
        self.words, self.pos, self.end, self.types = words, start, end, types

    def more(self) -> bool:
        return self.pos < self.end

    def word(self) -> int:
        if self.pos >= self.end:
            raise DecodeError(f"instruction ends early at word {self.pos}")
        self.pos += 1
        return self.words[self.pos - 1]


def _string(r: _Reader) -> str:
    data = b""
    while True:
        chunk = r.word().to_bytes(4, "little")
        data += chunk
        if 0 in chunk:
            return data[:data.index(0)].decode("utf-8", "replace")


def _number(r: _Reader, ins: Instruction) -> None:
    """LiteralContextDependentNumber: width and kind come from the result type."""
    type_id = ins.operands[0].value if ins.operands else None
    op, width = r.types.get(type_id, ("OpTypeInt", 32))
    if width <= 32:
        raw = r.word()
        ins.operands.append(raw)
        value = raw
    else:
        lo, hi = r.word(), r.word()
        ins.operands.append(Words((lo, hi)))
        raw = value = hi << 32 | lo
    if op == "OpTypeFloat":
        fmt = {16: "<e", 32: "<f", 64: "<d"}[width]
        value = struct.unpack(fmt, raw.to_bytes(width // 8, "little"))[0]
    ins.shown.append(str(value))


def _enum(kind: str, r: _Reader, ins: Instruction) -> None:
    raw = r.word()
    names = G.ENUMERANT_NAMES[kind]
    if G.OPERAND_KINDS[kind] == "ValueEnum":
        name = names.get(raw, raw)
        ins.operands.append(name)
        ins.shown.append(str(name))
        params = G.ENUMERANTS[kind][name][2] if isinstance(name, str) else ()
    else:
        bits = [1 << b for b in range(32) if raw >> b & 1]
        set_names = [names.get(bit, bit) for bit in bits]
        text = "|".join(str(n) for n in set_names) or names.get(0, "0")
        ins.operands.append(text if all(isinstance(n, str) for n in set_names) else raw)
        ins.shown.append(text)
        params = tuple(p for n in set_names if isinstance(n, str)
                       for p in G.ENUMERANTS[kind][n][2])
    for pkind in params:
        _operand(pkind, r, ins)


def _operand(kind: str, r: _Reader, ins: Instruction) -> None:
    category = G.OPERAND_KINDS[kind]
    if category == "Composite":
        for base in G.COMPOSITE_KINDS[kind]:
            _operand(base, r, ins)
    elif category == "Id":
        ident = Id(r.word())
        ins.operands.append(ident)
        ins.shown.append(str(ident))
    elif kind == "LiteralString":
        text = _string(r)
        ins.operands.append(text)
        ins.shown.append(json.dumps(text, ensure_ascii=False))
    elif kind == "LiteralContextDependentNumber":
        _number(r, ins)
    elif category == "Literal":
        value = r.word()
        ins.operands.append(value)
        ins.shown.append(str(value))
    else:
        _enum(kind, r, ins)


def _instruction(words: list[int], start: int, end: int, types: dict) -> Instruction:
    opcode = words[start] & 0xFFFF
    if opcode not in G.OPCODE_NAMES:
        raise DecodeError(f"unknown opcode {opcode} at word {start}")
    opname = G.OPCODE_NAMES[opcode]
    ins = Instruction(opname, None)
    r = _Reader(words, start + 1, end, types)
    for kind, quant in G.OPCODES[opname][1]:
        if kind == "IdResult":
            ins.result = r.word()
        elif quant == "" or (quant == "?" and r.more()):
            _operand(kind, r, ins)
        elif quant == "*":
            while r.more():
                _operand(kind, r, ins)
    if r.more():
        raise DecodeError(f"{opname} at word {start}: {end - r.pos} word(s) left over")
    if opname in ("OpTypeInt", "OpTypeFloat"):
        types[ins.result] = (opname, ins.operands[0])
    elif opname == "OpExtInstImport":
        types[("import", ins.result)] = ins.operands[0]
    elif opname == "OpExtInst" and types.get(("import", ins.operands[1].value)) == "OpenCL.std":
        ins.shown[2] = G.OPENCL_STD_NAMES.get(ins.operands[2], ins.shown[2])
    return ins


def decode(data: bytes) -> tuple[dict, list[Instruction]]:
    """Header fields and instructions of a binary module (little-endian)."""
    if len(data) % 4 or len(data) < 20:
        raise DecodeError("a SPIR-V module is a whole number of words, at least 5")
    words = list(struct.unpack(f"<{len(data) // 4}I", data))
    if words[0] != G.MAGIC_NUMBER:
        raise DecodeError(f"bad magic number {words[0]:#010x}")
    header = {"version": (words[1] >> 16 & 0xFF, words[1] >> 8 & 0xFF),
              "generator": words[2], "bound": words[3], "schema": words[4]}
    out, pos, types = [], 5, {}
    while pos < len(words):
        count = words[pos] >> 16
        if count == 0 or pos + count > len(words):
            raise DecodeError(f"bad word count {count} at word {pos}")
        out.append(_instruction(words, pos, pos + count, types))
        pos += count
    return header, out


def disassemble(data: bytes) -> str:
    header, instructions = decode(data)
    major, minor = header["version"]
    lines = ["; SPIR-V", f"; Version: {major}.{minor}", f"; Generator: {header['generator']}",
             f"; Bound: {header['bound']}", f"; Schema: {header['schema']}"]
    lines += [str(ins) for ins in instructions]
    return "\n".join(lines) + "\n"
