"""A reference interpreter for host-style IR (SSA or slot form), for the optimizer's tests.

`run(fn, args, memory=None, fuel=100_000)` executes one function and returns
`(result, memory bytes)`. Semantics are the language's (and `opt/fold.py`'s): integers wrap
at their width with signedness from the type, f32 results round through a 4-byte pack,
integer division truncates toward zero. Pointers are offsets into one flat byte memory.
A division by zero, an INT_MIN / -1 or an out-of-range access raises `Trap` (shift counts
are masked and float->int saturates, as hardware never traps there); running
out of fuel raises `OutOfFuel` (the random programs always terminate, so that is a bug).
"""
from __future__ import annotations

import math
import struct

from toolchain.compiler.ir.module import Const, Function, Global, Instr, Local, Undef
from toolchain.compiler.ir.types import BoolType, FloatType, IntType, Type
from toolchain.compiler.opt.fold import normalize


class Trap(Exception):
    pass


class OutOfFuel(Exception):
    pass


def _fmt(t: Type) -> str:
    if isinstance(t, FloatType):
        return "<f" if t.bits == 32 else "<d"
    if isinstance(t, BoolType):
        return "<B"
    if isinstance(t, IntType):
        code = {8: "b", 16: "h", 32: "i", 64: "q"}[t.bits]
        return "<" + (code if t.signed else code.upper())
    return "<Q"                                       # pointers


_norm = normalize                 # the language's value of a result (fold.py)


def _fbits(v: float, bits: int) -> int:
    return int.from_bytes(struct.pack("<f" if bits == 32 else "<d", v), "little")


def _cmp(pred: str, a, b) -> bool:
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
            "ge": a >= b}[pred]


def _binop(op: str, t: Type, a, b):
    if isinstance(t, FloatType):
        if op == "div":
            if b == 0:
                if a == 0 or math.isnan(a):
                    return math.nan
                return math.copysign(math.inf, a) * math.copysign(1.0, b)
            return a / b
        if op in ("min", "max"):
            if math.isnan(a):
                return b
            if math.isnan(b):
                return a
            return min(a, b) if op == "min" else max(a, b)
        return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b}[op]()
    if isinstance(t, BoolType):
        return {"and": a and b, "or": a or b, "xor": a != b}[op]
    if op in ("div", "rem"):
        if b == 0 or (t.signed and b == -1 and a == -(1 << (t.bits - 1))):
            raise Trap(f"{op} by {b}")
        q = abs(a) // abs(b)
        q = -q if (a < 0) != (b < 0) else q
        return q if op == "div" else a - q * b
    if op in ("shl", "shr"):
        b &= t.bits - 1                   # hardware never traps here (x86 masks the count)
        if op == "shl":
            return a << b
        return a >> b if t.signed else (a & ((1 << t.bits) - 1)) >> b
    return {"add": a + b, "sub": a - b, "mul": a * b, "and": a & b, "or": a | b,
            "xor": a ^ b, "min": min(a, b), "max": max(a, b)}[op]


def _convert(src: Type, dst: Type, v):
    if isinstance(dst, BoolType):
        return v != 0
    if isinstance(dst, FloatType):
        return float(v)
    if isinstance(dst, IntType):
        if isinstance(src, FloatType):
            # never a trap on hardware; any fixed answer will do (fold.py never folds it)
            if math.isnan(v):
                return 0
            lo = -(1 << (dst.bits - 1)) if dst.signed else 0
            hi = (1 << (dst.bits - 1 if dst.signed else dst.bits)) - 1
            return lo if v < lo else hi if v > hi else int(v)
        return int(v)
    raise Trap(f"convert to {dst}")


class Machine:
    def __init__(self, memory: bytearray | None = None, fuel: int = 100_000):
        self.mem = memory if memory is not None else bytearray(1 << 16)
        self.top = 16                                  # 0 is null
        self.fuel = fuel
        self.globals: dict[Global, int] = {}
        self.objects: dict[Instr, int] = {}             # gpu.alloc storage, static

    def alloc(self, size: int, align: int = 8) -> int:
        self.top = (self.top + align - 1) // align * align
        addr = self.top
        self.top += max(size, 1)
        if self.top > len(self.mem):
            raise Trap("out of memory")
        return addr

    def load(self, t: Type, addr: int):
        if t.is_vector:                    # one access of N elements: aligned to its size
            self._check_vector(t, addr)
            return tuple(self.load(t.elem, addr + k * t.elem.size) for k in range(t.count))
        size = struct.calcsize(_fmt(t))
        if addr <= 0 or addr + size > len(self.mem):
            raise Trap(f"load at {addr}")
        v = struct.unpack_from(_fmt(t), self.mem, addr)[0]
        return bool(v) if isinstance(t, BoolType) else v

    def _check_vector(self, t: Type, addr: int) -> None:
        if addr % t.align:
            raise Trap(f"misaligned {t} access at {addr}")

    def store(self, t: Type, addr: int, v) -> None:
        if t.is_vector:
            self._check_vector(t, addr)
            for k in range(t.count):
                self.store(t.elem, addr + k * t.elem.size, v[k])
            return
        size = struct.calcsize(_fmt(t))
        if addr <= 0 or addr + size > len(self.mem):
            raise Trap(f"store at {addr}")
        struct.pack_into(_fmt(t), self.mem, addr, int(v) if isinstance(t, BoolType) else v)

    def call(self, fn: Function, args: list):
        if fn.is_extern and fn.symbol in ("malloc", "calloc"):    # fresh zeroed storage
            return self.alloc(int(args[0]) * (int(args[1]) if len(args) > 1 else 1), 16)
        env: dict = dict(zip(fn.params, args))
        slots: dict[Local, object] = {}
        block, prev = fn.blocks[0], None
        while True:
            phis = [i for i in block.instrs if i.op == "phi"]
            if phis:                                   # all phis read before any is written
                vals = [self.value(env, dict(zip(map(id, p.targets), p.operands))[id(prev)])
                        for p in phis]
                env.update(zip(phis, vals))
            for ins in block.instrs[len(phis):]:
                self.fuel -= 1
                if self.fuel < 0:
                    raise OutOfFuel()
                op = ins.op
                if op == "br":
                    block, prev = ins.targets[0], block
                    break
                if op == "cbr":
                    c = self.value(env, ins.operands[0])
                    block, prev = ins.targets[0 if c else 1], block
                    break
                if op == "ret":
                    return self.value(env, ins.operands[0]) if ins.operands else None
                if op == "unreachable":
                    raise Trap("unreachable")
                if op == "local.get":
                    loc = ins.operands[0]
                    env[ins] = slots.get(loc, _norm(loc.type, 0) if loc.type.is_scalar
                                         else None)
                elif op == "local.set":
                    slots[ins.operands[0]] = self.value(env, ins.operands[1])
                else:
                    env[ins] = self.exec(ins, [self.value(env, o) for o in ins.operands])

    def value(self, env: dict, v):
        if isinstance(v, Const):
            return _norm(v.type, v.value) if v.type.is_scalar else v.value
        if isinstance(v, Undef):
            if v.type.is_vector:
                return (_norm(v.type.elem, 0),) * v.type.count
            return _norm(v.type, 0)
        if isinstance(v, Global):
            if v not in self.globals:
                self.globals[v] = self.alloc(v.value_type.size, v.value_type.align or 1)
            return self.globals[v]
        if isinstance(v, Function):
            return v
        return env[v]

    def exec(self, ins: Instr, a: list):
        op, t = ins.op, ins.type
        if op in ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr",
                  "min", "max"):
            return _norm(t, _binop(op, t, a[0], a[1]))
        if op == "neg":
            return _norm(t, -a[0])
        if op == "not":
            return (not a[0]) if isinstance(t, BoolType) else _norm(t, ~a[0])
        if op == "cmp":
            return _cmp(ins.attrs["pred"], a[0], a[1])
        if op == "select":
            return a[1] if a[0] else a[2]
        if op == "convert":
            return _norm(t, _convert(ins.operands[0].type, t, a[0]))
        if op == "bitcast":
            src = ins.operands[0].type
            if isinstance(src, FloatType) and isinstance(t, IntType):
                return t.wrap(_fbits(a[0], src.bits))
            if isinstance(t, FloatType) and isinstance(src, IntType):
                fmt = "<f" if t.bits == 32 else "<d"
                return struct.unpack(fmt, (a[0] & ((1 << t.bits) - 1)).to_bytes(
                    t.bits // 8, "little"))[0]
            return a[0]
        if op in ("ptrtoint", "inttoptr", "addrspacecast"):
            return _norm(t, a[0]) if isinstance(t, IntType) else a[0]
        if op == "ptradd":
            return a[0] + a[1] * ins.type.pointee.size
        if op == "byteadd":
            return a[0] + a[1]
        if op == "fieldptr":
            st = ins.operands[0].type.pointee
            return a[0] + st.offsets[ins.attrs["index"]]
        if op == "alloca":
            at = ins.attrs["type"]
            return self.alloc(at.size, at.align or 1)
        if op == "gpu.alloc":             # the IR's promise: 16-byte aligned storage
            if ins not in self.objects:
                elem = ins.attrs["elem"]
                self.objects[ins] = self.alloc(elem.size * int(ins.attrs["count"]), 16)
            return self.objects[ins]
        if op == "vec.extract":
            return a[0][ins.attrs["index"]]
        if op == "vec.insert":
            v = list(a[0])
            v[ins.attrs["index"]] = a[1]
            return tuple(v)
        if op == "load":
            return self.load(t, a[0])
        if op == "store":
            self.store(ins.operands[1].type, a[0], a[1])
            return None
        if op == "call":
            return self.call(a[0], a[1:])
        if op == "math.sqrt":
            return _norm(t, math.sqrt(a[0])) if a[0] >= 0 else math.nan
        if op == "math.fabs":
            return abs(a[0])
        raise Trap(f"the interpreter does not model {op}")


def run(fn: Function, args: list, memory: bytearray | None = None, fuel: int = 100_000):
    """Run `fn(*args)`; returns (result, memory)."""
    m = Machine(memory, fuel)
    return m.call(fn, list(args)), bytes(m.mem)
