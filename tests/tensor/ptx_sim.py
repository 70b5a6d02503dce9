"""A small CPU interpreter of the PTX the tensor lowerings emit (tests only).

It executes one kernel module over a grid, thread by thread, so the CPU suite can run the
*generated* address arithmetic, fragment packing, metadata translation, runtime selection,
K loops and replay against tests/support/tensor_oracle.py without a GPU. It knows only
the opcodes these modules use and fails loudly (SimError) on anything else.

Input: the compiler's instruction objects (a `ptx.instr.PtxModule`, e.g. the driver
Result's `objects`); it reads each PtxInstr's opcode, modifiers, guard and operands
(`Addr`, `Vec` or register/immediate text). Hand-written PTX text (a test's own snippet)
goes through the compiler's text reader (`ptx.parse.parse_module`) into the same objects.

Model: registers hold raw bit patterns (ints); memory is one flat little-endian bytearray
with buffers at 256-byte aligned addresses (address 0 is never valid); every thread of a
block runs until it blocks at a collective (mma, bar.warp.sync, bar.sync) or exits; a warp
collective runs when every live lane of the warp waits at the same instruction.
`activemask` is the warp's live-lane mask. Workgroup (`.shared`) arrays get fresh zeroed
memory per block; `cp.async` copies complete at once (commit and wait are no-ops). Warp MMAs are evaluated from the PTX ISA
fragment equations written out independently below (not imported from the compiler), in
float64 and rounded to f32: exact for the exactly representable inputs the tests use.
"""
from __future__ import annotations

import math
import re
import struct

import numpy as np

from tests.support import tensor_oracle as O
from toolchain.compiler.targets.ptx.instr import LABEL, OP, Addr, PtxModule, Vec
from toolchain.compiler.targets.ptx.parse import parse_module


class SimError(AssertionError):
    pass


M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", np.float32(x)))[0]


def bits_f32(b: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", b & M32))[0])


def f16_val(b: int) -> float:
    return float(np.uint16(b & 0xFFFF).view(np.float16))


def bf16_val(b: int) -> float:
    return bits_f32((b & 0xFFFF) << 16)


def parse(ptx, kernel: str):
    """(param names, instruction list, label -> index) of `kernel`; `ptx` is a PtxModule
    (instruction objects) or hand-written PTX text. Instructions are
    (guard register or None, negated, opcode name, operands)."""
    module = ptx if isinstance(ptx, PtxModule) else parse_module(ptx)
    fn = module.function(kernel)
    code, labels = [], {}
    for ins in fn.body:
        if ins.kind == LABEL:
            labels[ins.name] = len(code)
        elif ins.kind == OP:
            code.append((ins.guard, ins.negated, ins.name, list(ins.dsts + ins.srcs)))
    return list(fn.params), code, labels


def shared_symbols(ptx, kernel: str) -> dict[str, int]:
    """Workgroup (`.shared`) byte arrays of the module and of `kernel`: name -> size."""
    if isinstance(ptx, PtxModule):
        decls = list(ptx.decls) + list(ptx.function(kernel).decls)
    else:                               # text: every declaration line of the module
        decls = ptx.splitlines()
    return {m.group(1): int(m.group(2)) for d in decls
            for m in [re.search(r"^\s*\.shared\s.*?\.b8\s+(\w+)\[(\d+)\]", d)] if m}


class Memory:
    def __init__(self):
        self.data = bytearray(256)
        self.buffers = {}

    def alloc(self, name: str, arr: np.ndarray) -> int:
        addr = (len(self.data) + 255) // 256 * 256
        raw = np.ascontiguousarray(arr).tobytes()
        self.data.extend(b"\0" * (addr - len(self.data)) + raw + b"\0" * 256)
        self.buffers[name] = (addr, arr.dtype, arr.size)
        return addr

    def read(self, name: str) -> np.ndarray:
        addr, dt, n = self.buffers[name]
        return np.frombuffer(bytes(self.data[addr:addr + n * dt.itemsize]), dtype=dt).copy()

    def load(self, addr: int, size: int) -> int:
        if addr <= 0 or addr + size > len(self.data) or addr % size:
            raise SimError(f"bad {size}-byte load at {addr:#x}")
        return int.from_bytes(self.data[addr:addr + size], "little")

    def store(self, addr: int, size: int, value: int) -> None:
        if addr <= 0 or addr + size > len(self.data) or addr % size:
            raise SimError(f"bad {size}-byte store at {addr:#x}")
        self.data[addr:addr + size] = (value & ((1 << 8 * size) - 1)).to_bytes(size, "little")


_WIDTH = {"u8": 8, "s8": 8, "b8": 8, "u16": 16, "s16": 16, "b16": 16, "f16": 16,
          "u32": 32, "s32": 32, "b32": 32, "f32": 32, "u64": 64, "s64": 64, "b64": 64,
          "f64": 64, "pred": 1}


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


class Thread:
    def __init__(self, sim, tid: tuple[int, int, int], lin: int, ctaid):
        self.sim, self.tid, self.lin, self.ctaid = sim, tid, lin, ctaid
        self.regs: dict[str, int] = {}
        self.pc, self.done, self.wait = 0, False, None

    @property
    def lane(self) -> int:
        return self.lin % 32

    def val(self, text: str) -> int:
        t = text
        if t.startswith("%"):
            special = self.sim.special(self, t)
            if special is not None:
                return special
            if t not in self.regs:
                if self.sim.undefined is not None:
                    return self.sim.undefined
                raise SimError(f"read of undefined register {t}")
            return self.regs[t]
        if t in self.sim.shared:                     # a workgroup array's address
            return self.sim.shared[t]
        if t.startswith("0f"):
            return int(t[2:], 16)
        if t.startswith("-"):
            return -self.val(t[1:])
        return int(t, 0)

    def vec(self, v: Vec) -> list[str]:
        if not isinstance(v, Vec):
            raise SimError(f"expected a vector operand, got {v!r}")
        return list(v.regs)

    def addr(self, a: Addr) -> int:
        if not isinstance(a, Addr):
            raise SimError(f"expected an address operand, got {a!r}")
        return self.val(a.base) + a.offset


def _arith(op: str, parts: list[str], th: Thread, ops: list[str]) -> None:
    ty = parts[-1]
    bits = _WIDTH[ty]
    vals = [th.val(o) for o in ops[1:]]
    wide = "wide" in parts
    mask = (1 << (2 * bits if wide else bits)) - 1
    signed = ty.startswith("s")
    if signed:
        vals = [_signed(v, bits) for v in vals]
    else:
        vals = [v & ((1 << bits) - 1) for v in vals]
    if op == "add":
        r = vals[0] + vals[1]
    elif op == "sub":
        r = vals[0] - vals[1]
    elif op == "mul":
        r = vals[0] * vals[1]
    elif op == "mad":
        r = vals[0] * vals[1] + (_signed(th.val(ops[3]), bits * (2 if wide else 1))
                                 if signed else th.val(ops[3]))
    elif op == "div":
        r = vals[0] // vals[1] if not signed else int(vals[0] / vals[1])
    elif op == "rem":
        r = vals[0] % vals[1]
    elif op == "shl":
        r = vals[0] << min(vals[1], bits) if vals[1] < bits else 0
    elif op == "shr":
        r = (vals[0] >> min(vals[1], bits)) if vals[1] < bits else (
            -1 if signed and vals[0] < 0 else 0)
    elif op == "and":
        r = vals[0] & vals[1]
    elif op == "or":
        r = vals[0] | vals[1]
    elif op == "xor":
        r = vals[0] ^ vals[1]
    elif op in ("min", "max"):                 # signed or unsigned by the type, as read
        r = (min if op == "min" else max)(vals[0], vals[1])
    else:
        raise SimError(f"unknown arithmetic {op}")
    th.regs[ops[0]] = r & mask


_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
_CMP.update(lo=_CMP["lt"], ls=_CMP["le"], hi=_CMP["gt"], hs=_CMP["ge"])   # unsigned forms


def _setp(parts, th: Thread, ops) -> None:
    ty, bits = parts[-1], _WIDTH[parts[-1]]
    a, b = th.val(ops[1]), th.val(ops[2])
    if ty.startswith("f"):
        a, b = bits_f32(a), bits_f32(b)
    elif ty.startswith("s"):
        a, b = _signed(a, bits), _signed(b, bits)
    else:
        a, b = a & ((1 << bits) - 1), b & ((1 << bits) - 1)
    cmp = parts[1]
    if ty.startswith("f"):          # ordered forms are false on NaN, unordered ones true
        nan = a != a or b != b
        r = int(nan if cmp.endswith("u") else not nan and _CMP[cmp](a, b)) \
            if cmp not in ("num", "nan") else int(nan == (cmp == "nan"))
        if cmp.endswith("u") and not nan:
            r = int(_CMP[cmp[:-1]](a, b))
    else:
        r = int(_CMP[cmp](a, b))
    if "and" in parts:
        r &= th.val(ops[3])
    th.regs[ops[0]] = r


def _mov(parts, th: Thread, ops) -> None:
    d, s = ops
    bits = _WIDTH[parts[-1]]
    if isinstance(s, Vec):
        names = th.vec(s)
        w = bits // len(names)
        th.regs[d] = sum((th.val(n) & ((1 << w) - 1)) << (w * i) for i, n in enumerate(names))
    elif isinstance(d, Vec):
        names, v = th.vec(d), th.val(s)
        w = bits // len(names)
        for i, n in enumerate(names):
            th.regs[n] = (v >> (w * i)) & ((1 << w) - 1)
    else:
        th.regs[d] = th.val(s) & ((1 << bits) - 1)


def _fp8_pair(fmt: str, v: int) -> int:
    lo = np.float16(O.decode(fmt, v & 0xFF)).view(np.uint16)
    hi = np.float16(O.decode(fmt, (v >> 8) & 0xFF)).view(np.uint16)
    return int(lo) | int(hi) << 16


def _f16_rne(b: int) -> int:
    return int(np.float32(bits_f32(b)).astype(np.float16).view(np.uint16))


def _cvt(parts, th: Thread, ops) -> None:
    if parts[1:] in (["rn", "f16x2", "f32"], ["rn", "bf16x2", "f32"]):
        one = _f16_rne if parts[2] == "f16x2" else _bf16_rne     # d, hi, lo: lo in bits 0-15
        th.regs[ops[0]] = one(th.val(ops[2]) & M32) | one(th.val(ops[1]) & M32) << 16
        return
    d, s = ops
    v = th.val(s)
    kinds = [p for p in parts[1:] if p not in ("rn", "rz", "rm", "rp", "sat", "rzi", "rni",
                                               "rmi", "rpi", "ftz")]
    dst, src = kinds
    if src in ("e4m3x2", "e5m2x2"):
        th.regs[d] = _fp8_pair(src[:4], v)
    elif (dst, src) == ("f32", "f16"):
        th.regs[d] = f32_bits(f16_val(v))
    elif (dst, src) == ("f16", "f32") and "rn" in parts:      # numpy rounds to nearest even
        th.regs[d] = _f16_rne(v)
    elif (dst, src) == ("bf16", "f32") and "rn" in parts:
        th.regs[d] = _bf16_rne(v & M32)
    elif dst == "f32" and src[0] in "us" and src[1:].isdigit():
        bits = _WIDTH[src]
        th.regs[d] = f32_bits(_int_f32(_signed(v, bits) if src[0] == "s" else
                                       v & ((1 << bits) - 1)))
    elif src == "f32" and dst[0] in "us" and dst[1:].isdigit():
        th.regs[d] = _f32_int(bits_f32(v & M32), dst, parts)
    elif dst[0] in "us" and src[0] in "usb":
        sb, db = _WIDTH[src], _WIDTH[dst]
        v = _signed(v, sb) if src[0] == "s" else v & ((1 << sb) - 1)
        th.regs[d] = v & ((1 << db) - 1)
    else:
        raise SimError(f"unsupported cvt {'.'.join(parts)}")


def _int_f32(v: int) -> float:
    """An integer rounded to f32, to nearest even (exactly: no double rounding)."""
    m = abs(v)
    shift = max(m.bit_length() - 24, 0)
    if shift:
        q, r = divmod(m, 1 << shift)
        half = 1 << (shift - 1)
        m = (q + (r > half or (r == half and q & 1))) << shift
    return float(m if v >= 0 else -m)


def _f32_int(x: float, dst: str, parts) -> int:
    """cvt.{rzi,rni,rmi,rpi}.<int>.f32: rounded to an integer, saturated to the type's range,
    NaN to 0 (the ISA's float-to-integer rules)."""
    bits = _WIDTH[dst]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dst[0] == "s" else (0, (1 << bits) - 1)
    if math.isnan(x):
        return 0
    if math.isinf(x):
        n = hi if x > 0 else lo
    else:
        mode = next((p for p in parts if p in ("rzi", "rni", "rmi", "rpi")), "rzi")
        n = {"rzi": math.trunc, "rni": round, "rmi": math.floor, "rpi": math.ceil}[mode](x)
    return min(max(n, lo), hi) & ((1 << bits) - 1)


def _bf16_rne(b: int) -> int:
    """f32 bits to bf16 rounded to nearest even (written out here, not the compiler's);
    a NaN stays a NaN, made quiet."""
    if (b >> 23) & 0xFF == 0xFF and b & 0x7FFFFF:
        return (b >> 16) | 0x40
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def _bits_op(op: str, ty: str, th: Thread, ops) -> None:
    width = _WIDTH[ty]
    v = [th.val(o) for o in ops[1:]]
    if op == "prmt":
        src = (v[0] & M32) | (v[1] & M32) << 32
        r = 0
        for i in range(4):
            sel = (v[2] >> (4 * i)) & 7
            r |= ((src >> (8 * sel)) & 0xFF) << (8 * i)
    elif op == "bfi":                       # pos and len as the ISA clamps them (0..255)
        a, b, pos, ln = v[0], v[1], v[2] & 0xFF, v[3] & 0xFF
        m = ((1 << ln) - 1) << pos
        r = (b & ~m) | ((a << pos) & m)
    elif op == "bfe":
        a, pos, ln = v[0] & ((1 << width) - 1), v[1] & 0xFF, v[2] & 0xFF
        r = (a >> pos) & ((1 << ln) - 1) if pos < width else 0
        top = min(pos + ln, width) - 1        # .s: the field's last bit (or the msb) extends
        if ty.startswith("s") and ln and (a >> top) & 1:
            r |= ~((1 << (top - pos + 1)) - 1) if top >= pos else ~0
    elif op == "popc":
        r = bin(v[0] & ((1 << width) - 1)).count("1")
    else:
        raise SimError(op)
    th.regs[ops[0]] = r & ((1 << width) - 1)


def _float(parts, th: Thread, ops) -> None:
    if parts[-1] != "f32":
        raise SimError(f"unsupported float op {'.'.join(parts)}")
    v = [bits_f32(th.val(o)) for o in ops[1:]]
    with np.errstate(all="ignore"):
        r = {"fma": lambda: v[0] * v[1] + v[2], "mul": lambda: v[0] * v[1],
             "add": lambda: v[0] + v[1]}[parts[0]]()
    th.regs[ops[0]] = f32_bits(r)


# ---------------------------------------------------------------- warp MMAs (PTX ISA maps)
def _fp8_a(k: int, lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    if k == 32:
        row = g + (8 if 4 <= i < 8 or i >= 12 else 0)
        return row, t * 4 + (i & 3) + (16 if i >= 8 else 0)
    return g + (8 if i >= 4 else 0), t * 4 + (i & 3)


def _fp8_b(k: int, lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g


def _acc(lane: int, i: int) -> tuple[int, int]:
    return (lane >> 2) + (8 if i >= 2 else 0), (lane & 3) * 2 + (i & 1)


def _elems(word: int, per: int):
    w = 32 // per
    return [(word >> (w * j)) & ((1 << w) - 1) for j in range(per)]


def warp_mma(head: str, lanes: list[Thread], ops: list[str]) -> None:
    if "block_scale" in head:
        return _scaled_mma(head, lanes, ops)
    parts = head.split(".")
    shape = next(p for p in parts if p.startswith("m16n8k"))
    k = int(shape[6:])
    a_t, b_t = parts[-3], parts[-2]
    sparse = parts[1].startswith("sp")
    A = np.zeros((16, k))
    B = np.zeros((k, 8))
    C = np.zeros((16, 8))
    for th in lanes:
        ln = th.lane
        a_words = [th.val(r) for r in th.vec(ops[1])]
        b_words = [th.val(r) for r in th.vec(ops[2])]
        for i, v in enumerate(th.val(r) for r in th.vec(ops[3])):
            C[_acc(ln, i)] = bits_f32(v)
        if sparse:
            _sparse_frags(th, ln, a_words, b_words, ops, A, B, a_t)
            continue
        if a_t in ("f16", "bf16"):
            _half_frags(ln, a_words, b_words, A, B, a_t)
            continue
        for i, code in enumerate(c for w in a_words for c in _elems(w, 4)):
            A[_fp8_a(k, ln, i)] = O.decode(a_t, code)
        for i, code in enumerate(c for w in b_words for c in _elems(w, 4)):
            B[_fp8_b(k, ln, i)] = O.decode(b_t, code)
    D = A @ B + C
    for th in lanes:
        for i, r in enumerate(th.vec(ops[0])):
            th.regs[r] = f32_bits(D[_acc(th.lane, i)])


def _half_frags(ln, a_words, b_words, A, B, t) -> None:
    """Dense m16n8k16 f16/bf16 (PTX ISA "Matrix fragments for mma.m16n8k16"): A element i
    (register i // 2, low half first) is row g (+8 for i in 2, 3, 6, 7), column
    2t + i % 2 (+8 for i >= 4); B element i is row 2t + i % 2 (+8 for i >= 2), column g."""
    val = f16_val if t == "f16" else bf16_val
    g, q = ln >> 2, ln & 3
    for i, v in enumerate(val(c) for w in a_words for c in _elems(w, 2)):
        A[g + (8 if i in (2, 3, 6, 7) else 0), 2 * q + (i & 1) + (8 if i >= 4 else 0)] = v
    for i, v in enumerate(val(c) for w in b_words for c in _elems(w, 2)):
        B[2 * q + (i & 1) + (8 if i >= 2 else 0), g] = v


def _sparse_frags(th, ln, a_words, b_words, ops, A, B, t) -> None:
    """mma.sp m16n8k16 f16/bf16: compressed A is the m16n8k8 A map; metadata of rows g and
    g+8 comes from the quad's lane 0 (sparsity selector 0): low/high 16 bits."""
    val = f16_val if t == "f16" else bf16_val
    g, q = ln >> 2, ln & 3
    quad0 = th.sim.lane_thread(th, ln & ~3)
    meta = quad0.val(ops[4])
    comp = [val(c) for w in a_words for c in _elems(w, 2)]
    for i, v in enumerate(comp):
        row, ccol = g + (8 if i >= 2 else 0), q * 2 + (i & 1)
        nib = (meta >> (16 * (row >= 8) + 4 * (ccol // 2))) & 0xF
        idx = (nib >> (2 * (ccol & 1))) & 3
        A[row, 4 * (ccol // 2) + idx] = v
    for i, v in enumerate(val(c) for w in b_words for c in _elems(w, 2)):
        B[q * 2 + (i & 1) + (8 if i >= 2 else 0), g] = v


# ---------------------------------------------------------------- the machine
_ARITH = {"add", "sub", "mul", "mad", "div", "rem", "shl", "shr", "and", "or", "xor", "min",
          "max"}
_COLLECTIVE = ("mma", "bar", "shfl")


def warp_shfl(op: str, lanes: list, ops) -> None:
    """`shfl.sync.idx.b32 d, a, lane, 31, -1` over a whole warp (the only form the
    tensor lowerings use): every lane reads `lane`'s a."""
    if not op.startswith("shfl.sync.idx.b32") or len(lanes) != 32:
        raise SimError(f"unsupported shuffle {op} over {len(lanes)} lanes")
    by_lane = {th.lane: th for th in lanes}
    vals = {th.lane: by_lane[th.val(ops[2]) & 31].val(ops[1]) for th in lanes}
    for th in lanes:
        th.regs[ops[0]] = vals[th.lane] & M32


def atom(th, parts, ops) -> None:
    """`atom.<sem>.<scope>.global.{add,exch}.u32 d, [a], v`: one thread at a time (the
    simulator runs threads one by one, so every atomic is)."""
    kind, ty = parts[-2], parts[-1]
    if ty != "u32" or kind not in ("add", "exch"):
        raise SimError(f"unsupported atomic {'.'.join(parts)}")
    at = th.addr(ops[1])
    old = th.sim.mem.load(at, 4)
    v = th.val(ops[2])
    th.sim.mem.store(at, 4, (old + v) & M32 if kind == "add" else v & M32)
    th.regs[ops[0]] = old
MAX_STEPS = 50_000_000


class Sim:
    """Run `kernel` of `ptx` on `grid` x `block` with `args` (("buf", name, ndarray) or
    ("u32"/"u64", value)); returns the Memory (read output buffers by name)."""

    def __init__(self, ptx, kernel: str, undefined: int | None = None):
        """`undefined`: the value an unwritten register reads as (None: an error). The
        sm_90a epilogue's predicated C loads leave out-of-range columns' registers
        unwritten and compute on them without storing the result."""
        self.undefined = undefined
        self.params, self.code, self.labels = parse(ptx, kernel)
        self.shared_sizes, self.shared = shared_symbols(ptx, kernel), {}
        self.steps = 0
        self.mmas = 0                   # warp MMAs executed (native paths taken)

    def special(self, th: Thread, name: str):
        dims = {"x": 0, "y": 1, "z": 2}
        if name == "%laneid":
            return th.lane
        if name == "%lanemask_lt":
            return (1 << th.lane) - 1
        if name in ("%dynamic_smem_size", "%smid"):   # no dynamic shared memory; one
            return 0                                    # multiprocessor
        m = re.fullmatch(r"%(tid|ntid|ctaid|nctaid)\.([xyz])", name)
        if not m:
            return None
        src = {"tid": th.tid, "ntid": self.block, "ctaid": th.ctaid, "nctaid": self.grid}
        return src[m.group(1)][dims[m.group(2)]]

    def lane_thread(self, th: Thread, lane: int) -> Thread:
        return self.threads[th.lin - th.lane + lane]

    def run(self, grid, block, args) -> Memory:
        as3 = (lambda v: (v, 1, 1) if isinstance(v, int) else tuple(v) + (1,) * (3 - len(v)))
        self.grid, self.block = as3(grid), as3(block)
        self.mem = self._new_memory()
        self.param_vals = {}
        for name, arg in zip(self.params, args):
            self.param_vals[name] = self.mem.alloc(arg[1], arg[2]) if arg[0] == "buf" \
                else int(arg[1])
        gx, gy, gz = self.grid
        for cz in range(gz):
            for cy in range(gy):
                for cx in (range(gx)[::-1] if self.reverse_x else range(gx)):
                    self._block((cx, cy, cz))
        return self.mem

    reverse_x = False                           # run x's blocks last to first (stream-K)

    def _new_memory(self) -> Memory:
        return Memory()

    def _block(self, ctaid) -> None:
        bx, by, bz = self.block
        self.threads = [Thread(self, (x, y, z), (z * by + y) * bx + x, ctaid)
                        for z in range(bz) for y in range(by) for x in range(bx)]
        self.threads.sort(key=lambda t: t.lin)
        self.shared = self._block_shared(ctaid)
        while True:
            for th in self.threads:
                while not th.done and th.wait is None:
                    self._step(th)
            live = [t for t in self.threads if not t.done]
            if not live:
                return
            if not self._collective(live):
                raise SimError("deadlock: threads wait at different collectives: " +
                               str(sorted({t.pc for t in live})))

    def _block_shared(self, ctaid) -> dict:
        """The workgroup's shared-memory arrays by name, fresh per block."""
        return {name: self.mem.alloc(f"{name}@{ctaid}", np.zeros(size, np.uint8))
                for name, size in self.shared_sizes.items()}

    def _warp(self, th: Thread) -> list[Thread]:
        base = th.lin - th.lane
        return [t for t in self.threads[base:base + 32] if not t.done]

    def _collective(self, live: list[Thread]) -> bool:
        for th in live:
            if th.wait.startswith("wgmma"):     # a subclass's warpgroup collective
                continue
            group = self._warp(th) if th.wait != "bar.sync" else live
            if all(t.wait is not None and t.pc == th.pc for t in group):
                guard, negated, op, ops = self.code[th.pc]
                if op.startswith("mma"):
                    warp_mma(op, group, ops)
                    self.mmas += 1
                elif op.startswith("shfl"):
                    warp_shfl(op, group, ops)
                for t in group:
                    t.wait, t.pc = None, t.pc + 1
                return True
        return False

    def _own_op(self, th: Thread, prefixes: tuple) -> tuple | None:
        """(op, operands) of th's next instruction when its opcode starts with one of
        `prefixes` (a subclass's own instructions) and its guard holds; else None, and
        _step runs it (or skips it, when guarded off)."""
        if th.pc >= len(self.code):
            return None
        guard, negated, op, ops = self.code[th.pc]
        if op.startswith(prefixes) and (guard is None or bool(th.val(guard)) != negated):
            return op, ops
        return None

    def _step(self, th: Thread) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise SimError("step limit")
        if th.pc >= len(self.code):
            th.done = True
            return
        guard, negated, op, ops = self.code[th.pc]
        if guard is not None:
            on = th.val(guard)
            if negated:
                on = not on
            if not on:
                th.pc += 1
                return
        parts = op.split(".")
        base = parts[0]
        if base in _COLLECTIVE:
            if len(self._warp(th)) < 32 and base == "mma":
                raise SimError("mma with a partial warp")
            th.wait = "bar.sync" if op == "bar.sync" else op
            return
        th.pc += 1
        if base == "bra":
            th.pc = self.labels[ops[0]]
        elif base == "ret" or base == "exit":
            th.done = True
        elif base == "ld":
            self._ld(th, parts, ops)
        elif base == "st" and isinstance(ops[1], Vec):          # st.v2/v4: consecutive
            size = _WIDTH[parts[-1]] // 8
            for i, r in enumerate(th.vec(ops[1])):
                self.mem.store(th.addr(ops[0]) + i * size, size, th.val(r))
        elif base == "st":
            size = _WIDTH[parts[-1]] // 8
            self.mem.store(th.addr(ops[0]), size, th.val(ops[1]))
        elif base == "cvta":                    # one flat address space here
            th.regs[ops[0]] = th.val(ops[1])
        elif base == "mov" and parts[-1] == "pred":
            th.regs[ops[0]] = th.val(ops[1])
        elif base == "mov":
            _mov(parts, th, ops)
        elif base in ("and", "or", "not") and parts[-1] == "pred":
            v = [th.val(o) for o in ops[1:]]
            th.regs[ops[0]] = (v[0] & v[1]) if base == "and" else (
                v[0] | v[1] if base == "or" else 1 - v[0])
        elif base in ("fma", "add", "mul") and parts[-1] == "f32":
            _float(parts, th, ops)
        elif base in _ARITH:
            _arith(base, parts, th, ops)
        elif base == "setp":
            _setp(parts, th, ops)
        elif base == "cvt":
            _cvt(parts, th, ops)
        elif base in ("prmt", "bfi", "bfe", "popc"):
            _bits_op(base, parts[-1], th, ops)
        elif base == "selp":
            pick = ops[1] if th.val(ops[3]) else ops[2]
            th.regs[ops[0]] = th.val(pick) & ((1 << _WIDTH[parts[-1]]) - 1)
        elif op.startswith("cp.async."):
            # sequential execution: a copy completes at once, so commit/wait are no-ops
            if op.startswith(("cp.async.ca.", "cp.async.cg.")):
                size = th.val(ops[2])
                for i in range(size):
                    self.mem.store(th.addr(ops[0]) + i, 1, self.mem.load(th.addr(ops[1]) + i, 1))
        elif base == "atom":
            atom(th, parts, ops)
        elif base == "activemask":
            th.regs[ops[0]] = sum(1 << t.lane for t in self._warp(th))
        else:
            raise SimError(f"unsupported instruction {op}")

    def _ld(self, th: Thread, parts, ops) -> None:
        if parts[1] == "param":
            th.regs[ops[0]] = self.param_vals[ops[1].base]
            return
        ty = parts[-1]
        bits = _WIDTH[ty]
        if isinstance(ops[0], Vec):                              # ld.v2/v4: consecutive
            for i, r in enumerate(th.vec(ops[0])):
                th.regs[r] = self.mem.load(th.addr(ops[1]) + i * bits // 8, bits // 8)
            return
        v = self.mem.load(th.addr(ops[1]), bits // 8)
        if ty.startswith("s"):
            v = _signed(v, bits) & M64
        th.regs[ops[0]] = v


# Block-scaled mma.sync (sm_120a/121a): the maps and scale-word conventions documented in
# toolchain/compiler/targets/ptx/tensor/scaled.py, restated here. Assembler-checked only.
def _fp4_a(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    return g + 8 * ((i >> 3) & 1), t * 8 + (i & 7) + 32 * (i >> 4)


def _fp4_b(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane & 3
    return t * 8 + (i & 7) + 32 * (i >> 3), g


def _container(fmt: str, byte: int) -> float:
    if fmt in ("e2m3", "e3m2"):
        return O.decode(fmt, byte & 0x3F)
    if fmt == "e2m1":
        return O.decode(fmt, (byte >> 2) & 0xF)
    return O.decode(fmt, byte)


def _scaled_mma(head: str, lanes: list[Thread], ops: list[str]) -> None:
    parts = head.split(".")
    k = int(next(p for p in parts if p.startswith("m16n8k"))[6:])
    kind = next(p for p in parts if p.startswith("kind::"))[6:]
    vec = int(next(p for p in parts if p.startswith("scale_vec::"))[11:-1])
    a_t, b_t, s_t = parts[-4], parts[-3], parts[-1]
    A, B, C = np.zeros((16, k)), np.zeros((k, 8)), np.zeros((16, 8))
    by_lane = {th.lane: th for th in lanes}
    for th in lanes:
        ln = th.lane
        a_w = [th.val(r) for r in th.vec(ops[1])]
        b_w = [th.val(r) for r in th.vec(ops[2])]
        for i, v in enumerate(th.val(r) for r in th.vec(ops[3])):
            C[_acc(ln, i)] = bits_f32(v)
        if kind == "mxf8f6f4":
            for i, c in enumerate(c for w in a_w for c in _elems(w, 4)):
                A[_fp8_a(32, ln, i)] = _container(a_t, c)
            for i, c in enumerate(c for w in b_w for c in _elems(w, 4)):
                B[_fp8_b(32, ln, i)] = _container(b_t, c)
        else:
            for i, c in enumerate(c for w in a_w for c in _elems(w, 8)):
                A[_fp4_a(ln, i)] = O.decode(a_t, c)
            for i, c in enumerate(c for w in b_w for c in _elems(w, 8)):
                B[_fp4_b(ln, i)] = O.decode(b_t, c)
    blk = k // vec
    sa = np.array([[O.decode(s_t, (by_lane[4 * (r & 7) + (r >> 3)].val(ops[4]) >> (8 * q))
                             & 0xFF) for q in range(vec)] for r in range(16)])
    sb = np.array([[O.decode(s_t, (by_lane[4 * c].val(ops[6]) >> (8 * q)) & 0xFF)
                    for c in range(8)] for q in range(vec)])
    q = np.arange(k) // blk
    D = (A * sa[:, q]) @ (B * sb[q, :]) + C
    for th in lanes:
        for i, r in enumerate(th.vec(ops[0])):
            th.regs[r] = f32_bits(D[_acc(th.lane, i)])
