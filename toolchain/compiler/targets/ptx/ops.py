"""Typed constructors of PTX instructions: what a lowering calls instead of writing text.

Each constructor takes the instruction's modifiers as separate, checked arguments (a type
from `TYPES`, a comparison from `COMPARES`, a state space from `SPACES`) and its operands
as registers, immediates (ints are printed in decimal), `Addr` memory operands (`mem`) or
`Vec` vectors (`vec`), and returns one `PtxInstr`; nothing is parsed. Forms that need a
particular target are rows of isa.py (their feature names are in the docstrings); the
lowering asks `profile.has(feature)` before it builds one. Spellings are PTX ISA 9.0's.

Lowerings append what these return with `em.put(...)`, which also exempts the instruction
from the peepholes (the tensor lowerings' sequences keep the shape their tests check).
"""
from __future__ import annotations

from .instr import COMMENT, LABEL, OP, Addr, PtxInstr, Vec

TYPES = frozenset(("pred", "b1", "b8", "b16", "b32", "b64", "u4", "u8", "u16", "u32", "u64",
                   "s4", "s8", "s16", "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "tf32",
                   "f32", "f64", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "ue8m0", "e4m3x2",
                   "e5m2x2"))
COMPARES = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ",
                      "neu", "ltu", "leu", "gtu", "geu", "num", "nan"))
SPACES = frozenset(("", ".global", ".shared", ".local", ".param", ".const", ".shared::cta"))


def _t(ty: str) -> str:
    if ty not in TYPES:
        raise ValueError(f"PTX type {ty!r} is not one of {sorted(TYPES)}")
    return ty


def _space(space: str) -> str:
    if space not in SPACES:
        raise ValueError(f"PTX state space {space!r} is not one of {sorted(SPACES)}")
    return space


def _ops(values) -> tuple:
    return tuple(v if isinstance(v, str) else str(v) for v in values)


def _s(v) -> str:
    return v if isinstance(v, str) else str(v)


# Spelled names per type, made once (KeyError: not a PTX type). The core lowerings' hottest
# paths (a local's mov, a select) take the name from here and append with `em.op`, which
# costs no more than the formatted name did.
MOV = {t: "mov." + t for t in TYPES}
SELP = {t: "selp." + t for t in TYPES}


def _op(name: str, dsts=(), srcs=(), guard: str | None = None,
        negated: bool = False) -> PtxInstr:
    return PtxInstr(OP, name, _ops(dsts), _ops(srcs), guard, negated)


def mem(base: str, offset: int = 0) -> Addr:
    """The memory operand `[base]` / `[base+offset]`. `base` may carry a constant offset
    already (`reg+N`, as address helpers hand them on); a zero offset is not printed."""
    reg, plus, off = base.partition("+")
    if plus and off.lstrip("-").isdigit():
        return Addr(reg, int(off) + offset)
    return Addr(base, offset)


def vec(*regs) -> Vec:
    """The vector operand `{a, b, ...}`."""
    return Vec(_ops(regs))


# ---- data movement and integer arithmetic -------------------------------------------------
def mov(ty: str, d, s) -> PtxInstr:
    return PtxInstr(OP, MOV[ty], (_s(d),), (_s(s),))


def cvt(to: str, frm: str, d, s, rounding: str | None = None) -> PtxInstr:
    rnd = f".{rounding}" if rounding else ""
    return _op(f"cvt{rnd}.{_t(to)}.{_t(frm)}", (d,), (s,))


def binary(opcode: str, ty: str, d, a, b) -> PtxInstr:
    """`add`, `sub`, `and`, `or`, `xor`, `shl`, `shr`, `min`, `max`, `div`, `rem` and the
    `mul.lo`/`mul.wide`/`mul.hi` forms (opcode spelled with its mode)."""
    if opcode not in _BINARY:
        raise ValueError(f"{opcode!r} is not a binary PTX opcode of this table")
    return _op(f"{opcode}.{_t(ty)}", (d,), (a, b))


_BINARY = frozenset(("add", "sub", "and", "or", "xor", "shl", "shr", "min", "max", "div",
                     "rem", "mul.lo", "mul.wide", "mul.hi", "add.rn", "sub.rn", "mul.rn"))


def mad(mode: str, ty: str, d, a, b, c) -> PtxInstr:
    """`mad.lo` / `mad.wide` / `mad.hi`."""
    if mode not in ("lo", "wide", "hi"):
        raise ValueError(f"mad mode {mode!r}")
    return _op(f"mad.{mode}.{_t(ty)}", (d,), (a, b, c))


def bfe(ty: str, d, a, pos, length) -> PtxInstr:
    return _op(f"bfe.{_t(ty)}", (d,), (a, pos, length))


def bfi(ty: str, d, field, into, pos, length) -> PtxInstr:
    return _op(f"bfi.{_t(ty)}", (d,), (field, into, pos, length))


def popc(ty: str, d, a) -> PtxInstr:
    return _op(f"popc.{_t(ty)}", (d,), (a,))


def prmt(d, a, b, selector) -> PtxInstr:
    return _op("prmt.b32", (d,), (a, b, selector))


def setp(compare: str, ty: str, p, a, b) -> PtxInstr:
    if compare not in COMPARES:
        raise ValueError(f"setp comparison {compare!r}")
    return PtxInstr(OP, f"setp.{compare}.{_t(ty)}", (_s(p),), (_s(a), _s(b)))


def activemask(d) -> PtxInstr:
    """Feature `subgroup.sync`."""
    return _op("activemask.b32", (d,))


# ---- memory ---------------------------------------------------------------------------------
def ld(space: str, ty: str, d, addr: Addr, guard: str | None = None) -> PtxInstr:
    return PtxInstr(OP, f"ld{_space(space)}.{_t(ty)}", (_s(d),), (addr,), guard)


def st(space: str, ty: str, addr: Addr, s) -> PtxInstr:
    return PtxInstr(OP, f"st{_space(space)}.{_t(ty)}", (), (addr, _s(s)))


def st_vec(space: str, ty: str, addr: Addr, values: Vec) -> PtxInstr:
    return _op(f"st{_space(space)}.v{len(values.regs)}.{_t(ty)}", (), (addr, values))


# ---- control --------------------------------------------------------------------------------
def bra(target: str, guard: str | None = None, negated: bool = False,
        uniform: bool = False) -> PtxInstr:
    return _op("bra.uni" if uniform else "bra", (), (target,), guard, negated)


def bar_sync(barrier: int = 0) -> PtxInstr:
    return _op("bar.sync", (), (barrier,))


def bar_warp_sync(mask) -> PtxInstr:
    """Feature `warp.sync`."""
    return _op("bar.warp.sync", (), (mask,))


def label(name: str, comment: str | None = None) -> PtxInstr:
    return PtxInstr(LABEL, name, comment=comment)


def comment(text: str) -> PtxInstr:
    """A `// text` line (annotations such as `mtlc.tensor_loop ...`)."""
    return PtxInstr(COMMENT, text)


# ---- mbarrier (sm_90: the workgroup GEMM's transaction barriers) ----------------------------
_MB = ".shared::cta.b64"


def mbarrier_init(bar: str, count) -> PtxInstr:
    return _op(f"mbarrier.init{_MB}", (), (mem(bar), count))


def mbarrier_try_wait_parity(done, bar: str, parity, cluster: bool = False) -> PtxInstr:
    sem = ".acquire.cluster" if cluster else ""
    return _op(f"mbarrier.try_wait.parity{sem}{_MB}", (done,), (mem(bar), parity))


def mbarrier_arrive(bar: str) -> PtxInstr:
    return _op(f"mbarrier.arrive{_MB}", ("_",), (mem(bar),))


def mbarrier_arrive_expect_tx(bar: str, nbytes) -> PtxInstr:
    return _op(f"mbarrier.arrive.expect_tx{_MB}", ("_",), (mem(bar), nbytes))


def mbarrier_inval(bar: str) -> PtxInstr:
    return _op(f"mbarrier.inval{_MB}", (), (mem(bar),))


def fence_mbarrier_init() -> PtxInstr:
    """Make this thread's mbarrier.init visible to the async proxy (and the cluster)."""
    return _op("fence.mbarrier_init.release.cluster")


# ---- the FP8 workgroup GEMM's pieces (tensor/wgmma_fp8.py; features wgmma, setmaxnreg) ----
def setmaxnreg(action: str, count: int) -> PtxInstr:
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 count` (warpgroup-wide register reallocation)."""
    if action not in ("inc", "dec"):
        raise ValueError(f"setmaxnreg action {action!r}")
    return _op(f"setmaxnreg.{action}.sync.aligned.u32", (), (count,))


def wgmma_fence() -> PtxInstr:
    return _op("wgmma.fence.sync.aligned")


def wgmma_commit_group() -> PtxInstr:
    return _op("wgmma.commit_group.sync.aligned")


def wgmma_wait_group(pending: int) -> PtxInstr:
    return _op("wgmma.wait_group.sync.aligned", (), (pending,))


WGMMA_K = {"f16": 16, "bf16": 16, "e4m3": 32, "e5m2": 32}


def wgmma_mma_async(n: int, d_type: str, a_type: str, b_type: str, d, a_desc: str,
                    b_desc: str, scale_d, scale_a: int = 1, scale_b: int = 1,
                    trans_b: int = 0) -> PtxInstr:
    """`wgmma.mma_async.sync.aligned.m64n<n>k<K>.<d>.<a>.<b> {d}, a-desc, b-desc, scale-d,
    imm-scale-a, imm-scale-b` with both operands from shared-memory descriptors (K from the
    input format: 16 for f16/bf16, 32 for FP8). f16/bf16 also take the two transpose
    immediates: imm-trans-a 0 (a K-major A), imm-trans-b `trans_b` (1: an MN-major B); FP8
    has none (K-major only)."""
    if a_type not in WGMMA_K or WGMMA_K[b_type] != WGMMA_K[a_type] or n % 8 or \
            not 8 <= n <= 256 or len(d) != n // 2 or trans_b not in (0, 1) or \
            (trans_b and WGMMA_K[a_type] != 16):
        raise ValueError(f"wgmma m64n{n} {a_type}.{b_type} with {len(d)} accumulators, "
                         f"trans-b {trans_b!r}")
    name = f"wgmma.mma_async.sync.aligned.m64n{n}k{WGMMA_K[a_type]}.{_t(d_type)}." \
           f"{_t(a_type)}.{_t(b_type)}"
    extra = (0, trans_b) if WGMMA_K[a_type] == 16 else ()
    return _op(name, (vec(*d),), (a_desc, b_desc, scale_d, scale_a, scale_b, *extra))


def wgmma_mma_async_rs(n: int, d_type: str, a_type: str, b_type: str, d, a, b_desc: str,
                       scale_d, trans_b: int, scale_a: int = 1, scale_b: int = 1) -> PtxInstr:
    """`wgmma.mma_async.sync.aligned.m64n<n>k16.<d>.<a>.<b> {d}, {a0, a1, a2, a3}, b-desc,
    scale-d, imm-scale-a, imm-scale-b, imm-trans-b` with A from registers (f16/bf16 only;
    the operand list of cute/arch/mma_sm90_gmma.hpp's *_RS forms: A is K-major, so there
    is no imm-trans-a); trans_b 1 reads an MN-major B."""
    if a_type not in ("f16", "bf16") or b_type != a_type or n % 8 or not 8 <= n <= 256 \
            or len(d) != n // 2 or len(a) != 4 or trans_b not in (0, 1):
        raise ValueError(f"wgmma m64n{n} {a_type}.{b_type} (A from registers) with {len(d)} "
                         f"accumulators, {len(a)} A registers, trans-b {trans_b!r}")
    name = f"wgmma.mma_async.sync.aligned.m64n{n}k16.{_t(d_type)}.{_t(a_type)}.{_t(b_type)}"
    return _op(name, (vec(*d),), (vec(*a), b_desc, scale_d, scale_a, scale_b, trans_b))


def ld_vec(space: str, ty: str, values: Vec, addr: Addr,
           guard: str | None = None, cache: str = "") -> PtxInstr:
    """`ld<space>[.<cache>].v<n>.<ty>` (`cache`: one of CACHE_HINTS, "" none)."""
    return _op(_access_name("ld", _space(space), cache, len(values.regs), _t(ty)), (values,),
               (addr,), guard)


def fma(ty: str, d, a, b, c, rounding: str = "rn") -> PtxInstr:
    """`fma.<rounding>.<ty>` d = a*b + c, rounded once."""
    if rounding not in ("rn", "rz", "rm", "rp") or ty not in ("f16", "f16x2", "bf16", "bf16x2",
                                                         "f32", "f64"):
        raise ValueError(f"fma.{rounding}.{ty}")
    return _op(f"fma.{rounding}.{_t(ty)}", (d,), (a, b, c))


# ---- tensor maps and bulk tensor copies (features tensormap.replace, fence.proxy.tensormap,
# cp.async.bulk.tensor) -------------------------------------------------------------------------
TENSORMAP_FIELDS = {"global_address": "b64", "rank": "b32", "box_dim": "b32",
                    "global_dim": "b32", "global_stride": "b64", "element_stride": "b32",
                    "elemtype": "b32", "interleave_layout": "b32", "swizzle_mode": "b32",
                    "fill_mode": "b32"}


def tensormap_replace(field: str, slot: str, *values) -> PtxInstr:
    """`tensormap.replace.tile.<field>.global.b1024.<type> [slot], [ordinal,] value`."""
    ty = TENSORMAP_FIELDS[field]
    return _op(f"tensormap.replace.tile.{field}.global.b1024.{ty}", (), (mem(slot), *values))


def fence_proxy_tensormap_release() -> PtxInstr:
    return _op("fence.proxy.tensormap::generic.release.gpu")


def fence_proxy_tensormap_acquire(slot: str, nbytes) -> PtxInstr:
    return _op("fence.proxy.tensormap::generic.acquire.gpu", (), (mem(slot), nbytes))


def cp_async_bulk_tensor_2d(dst: str, tmap: str, k, row, bar: str,
                            multicast_mask=None) -> PtxInstr:
    """A 2-D tile copy global -> shared completing on an mbarrier (`.multicast::cluster`
    to the cluster workgroups in `multicast_mask`, a u16, when given)."""
    name = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    coords = Addr(f"{tmap}, {vec(k, row)}")      # [map, {coordinates}]
    if multicast_mask is None:
        return _op(name, (), (mem(dst), coords, mem(bar)))
    return _op(name + ".multicast::cluster", (), (mem(dst), coords, mem(bar), multicast_mask))


# ---- WMMA (features wmma.<family>, wmma.b1.and) ----------------------------------------------
def wmma_load(which: str, layout: str, shape: str, space: str, ty: str, regs, addr: str,
              ld) -> PtxInstr:
    """`wmma.load.{a,b,c}.sync.aligned.<layout>.<shape><space>.<type> {regs}, [addr], ld`."""
    if which not in ("a", "b", "c") or layout not in ("row", "col"):
        raise ValueError(f"wmma.load.{which}.{layout}")
    return _op(f"wmma.load.{which}.sync.aligned.{layout}.{shape}{_space(space)}.{_t(ty)}",
               (vec(*regs),), (mem(addr), ld))


def wmma_store(layout: str, shape: str, space: str, ty: str, addr: str, regs, ld) -> PtxInstr:
    if layout not in ("row", "col"):
        raise ValueError(f"wmma.store layout {layout!r}")
    return _op(f"wmma.store.d.sync.aligned.{layout}.{shape}{_space(space)}.{_t(ty)}", (),
               (mem(addr), vec(*regs), ld))


def wmma_mma(family: str, a_layout: str, b_layout: str, shape: str, d, a, b, c, *,
             d_type: str = "f32", c_type: str = "f32", rounding: str = "rn",
             popc: str = "xor", a_type: str = "", b_type: str = "",
             satfinite: bool = False) -> PtxInstr:
    """One `wmma.mma` of `family` (f16, bf16, tf32, f64, b1, or an integer family with its
    PTX `a_type`/`b_type`): d = a*b + c over register tuples."""
    al, bl = a_layout, b_layout
    if family == "f16":
        name = f"wmma.mma.sync.aligned.{al}.{bl}.{shape}.{_t(d_type)}.{_t(c_type)}"
    elif family in ("bf16", "tf32"):
        name = f"wmma.mma.sync.aligned.{al}.{bl}.{shape}.f32.{family}.{family}.f32"
    elif family == "f64":
        name = f"wmma.mma.sync.aligned.{al}.{bl}.{shape}.{rounding}.f64.f64.f64.f64"
    elif family == "b1":
        if popc not in ("xor", "and"):
            raise ValueError(f"b1 wmma popc op {popc!r}")
        name = f"wmma.mma.{popc}.popc.sync.aligned.row.col.{shape}.s32.b1.b1.s32"
    else:
        sat = ".satfinite" if satfinite else ""
        name = f"wmma.mma.sync.aligned.{al}.{bl}.{shape}.s32.{a_type}.{b_type}.s32{sat}"
    return _op(name, (vec(*d),), (vec(*a), vec(*b), vec(*c)))


# ---- warp-level mma.sync (features mma.sync, mma.sp, mma.fp8.*, mma.block_scale) --------------
def mma_sync(spelling: str, d, a, b, c, *extra) -> PtxInstr:
    """One `mma.sync`/`mma.sp` of the form `spelling` (the tensor Form's head, e.g.
    `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`): d = a*b + c over register
    tuples; `extra`: a sparse form's metadata register and selector."""
    if not spelling.startswith(("mma.sync.", "mma.sp.", "mma.sp::ordered_metadata.")):
        raise ValueError(f"{spelling!r} is not an mma.sync form")
    return _op(spelling, (vec(*d),), (vec(*a), vec(*b), vec(*c), *extra))


# ---- selection and warp-synchronous collectives (features subgroup.sync, redux.sync) --------
def selp(ty: str, d, a, b, p) -> PtxInstr:
    return PtxInstr(OP, SELP[ty], (_s(d),), (_s(a), _s(b), _s(p)))


def vote_sync(mode: str, d, p, mask) -> PtxInstr:
    """`vote.sync.any.pred` / `vote.sync.all.pred` / `vote.sync.ballot.b32`."""
    ty = {"any": "pred", "all": "pred", "ballot": "b32"}[mode]
    return _op(f"vote.sync.{mode}.{ty}", (d,), (p, mask))


def redux_sync(op: str, ty: str, d, a, mask) -> PtxInstr:
    if op not in ("add", "min", "max", "and", "or", "xor"):
        raise ValueError(f"redux.sync op {op!r}")
    return _op(f"redux.sync.{op}.{_t(ty)}", (d,), (a, mask))


# ==== appended for the block-scaled lowerings (tensor/scaled.py, tensor/scaled_matmul.py) ====
SCALE_VEC = {"mxf8f6f4": ("1X",), "mxf4": ("2X",), "mxf4nvf4": ("2X", "4X")}


def mma_block_scale(kind: str, scale_vec: str, k: int, a_type: str, b_type: str,
                    scale_type: str, d, a, b, c, scale_a, scale_b) -> PtxInstr:
    """Feature `mma.block_scale`: one m16n8k{k} block-scaled `mma.sync` of `kind`, d = (a *
    scale_a) (b * scale_b) + c over register tuples; `scale_a`/`scale_b` are the lanes'
    32-bit scale words (byte-id and thread-id 0)."""
    if scale_vec not in SCALE_VEC.get(kind, ()) or k not in (32, 64) \
            or scale_type not in ("ue8m0", "ue4m3"):
        raise ValueError(f"block-scaled mma kind::{kind} scale_vec::{scale_vec} k{k} "
                         f"{scale_type}")
    name = (f"mma.sync.aligned.m16n8k{k}.row.col.kind::{kind}.block_scale"
            f".scale_vec::{scale_vec}.f32.{_t(a_type)}.{_t(b_type)}.f32.{scale_type}")
    zero = vec(0, 0)                                   # byte-id, thread-id
    return _op(name, (vec(*d),), (vec(*a), vec(*b), vec(*c), scale_a, zero, scale_b, zero))


# ==== appended for the core lowerings (function.py, lower_arith/gpu/intrinsics/memory.py) ====
# The scalar lowerings append one instruction per IR instruction with `em.op(name, ...)`
# (the hot path of every compile), so their opcodes come from the tables below: keyed by
# the form's typed parts, each name is spelled and checked once on first use (ValueError
# for a part outside the form), then it is a dict hit. Rarer forms have constructors.
class Spellings(dict):
    """(typed parts) -> the opcode they spell, spelled by `spell` on first use."""
    __slots__ = ("spell",)

    def __init__(self, spell):
        super().__init__()
        self.spell = spell

    def __missing__(self, key):
        name = self[key] = self.spell(*key)
        return name


_FLOAT_TYPES = frozenset(("f16", "f16x2", "bf16", "bf16x2", "f32", "f64"))
_FLOAT_ONLY = frozenset(("mul", "div.rn"))        # the plain float multiply, IEEE divide


def _binary_name(opcode: str, ty: str) -> str:
    if opcode not in _BINARY and opcode not in _FLOAT_ONLY:
        raise ValueError(f"{opcode!r} is not a binary PTX opcode of this table")
    if opcode in _FLOAT_ONLY and ty not in _FLOAT_TYPES:
        raise ValueError(f"{opcode}.{ty}: {opcode} without a mode is a float form")
    return f"{opcode}.{_t(ty)}"


_UNARY = frozenset(("not", "neg", "abs", "sqrt.rn", "rsqrt.approx", "sin.approx",
                    "cos.approx", "lg2.approx", "ex2.approx"))


def _unary_name(opcode: str, ty: str) -> str:
    if opcode not in _UNARY:
        raise ValueError(f"{opcode!r} is not a unary PTX opcode of this table")
    return f"{opcode}.{_t(ty)}"


def _setp_name(compare: str, ty: str) -> str:
    if compare not in COMPARES:
        raise ValueError(f"setp comparison {compare!r}")
    return f"setp.{compare}.{_t(ty)}"


def _cvt_name(to: str, frm: str, rounding: str) -> str:
    if rounding not in ("", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"):
        raise ValueError(f"cvt rounding {rounding!r}")
    return f"cvt{'.' + rounding if rounding else ''}.{_t(to)}.{_t(frm)}"


CACHE_HINTS = frozenset(("", "L1::evict_last", "cs", "cg"))   # cg: L2 only, not L1


def _access_name(opcode: str, space: str, cache: str, count: int, ty: str) -> str:
    if cache not in CACHE_HINTS or count not in (1, 2, 4, 8):
        raise ValueError(f"{opcode}{space} cache hint {cache!r}, vector of {count}")
    hint = "." + cache if cache else ""
    return f"{opcode}{_space(space)}{hint}{'.v%d' % count if count > 1 else ''}.{_t(ty)}"


# BINARY[opcode, type]: `add.s32`, `mul.lo.u64`, `mul.wide.s32`, `add.rn.f32`, `mul.f32`...
BINARY = Spellings(_binary_name)
# UNARY[opcode, type]: `not.b32`, `neg.f32`, `abs.f64`, `sqrt.rn.f32`, `sin.approx.f32`...
UNARY = Spellings(_unary_name)
SETP = Spellings(_setp_name)                      # SETP[compare, type]
CVT = Spellings(_cvt_name)                        # CVT[to, from, rounding ("": none)]
# LD/ST[space, cache hint, vector count (1: scalar), type]: `ld.global.cs.v4.f32`
LD = Spellings(lambda space, cache, count, ty: _access_name("ld", space, cache, count, ty))
ST = Spellings(lambda space, cache, count, ty: _access_name("st", space, cache, count, ty))

_SEMS = frozenset(("relaxed", "acquire", "release", "acq_rel", "sc"))
_SCOPES = frozenset(("cta", "cluster", "gpu", "sys"))
_ATOM_SPACES = frozenset(("global", "shared"))
_ATOM_OPS = frozenset(("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec"))


def _ordered(sem: str, scope: str, space: str | None = None) -> str:
    if sem not in _SEMS or scope not in _SCOPES or \
            (space is not None and space not in _ATOM_SPACES):
        raise ValueError(f"memory order .{sem}.{scope} in {space!r}")
    return f".{sem}.{scope}" if space is None else f".{sem}.{scope}.{space}"


def fence(sem: str, scope: str) -> PtxInstr:
    """`fence.<sem>.<scope>` (`fence.sc.gpu`, `fence.acq_rel.cta`)."""
    return _op("fence" + _ordered(sem, scope))


def ld_ordered(sem: str, scope: str, space: str, ty: str, d, addr: Addr) -> PtxInstr:
    """Feature `atom.scoped`: `ld.<sem>.<scope>.<space>.<type>` (an atomic load)."""
    return _op(f"ld{_ordered(sem, scope, space)}.{_t(ty)}", (d,), (addr,))


def st_ordered(sem: str, scope: str, space: str, ty: str, addr: Addr, s) -> PtxInstr:
    """Feature `atom.scoped`: `st.<sem>.<scope>.<space>.<type>` (an atomic store)."""
    return _op(f"st{_ordered(sem, scope, space)}.{_t(ty)}", (), (addr, s))


def atom(sem: str, scope: str, space: str, opcode: str, ty: str, d, addr: Addr,
         *values) -> PtxInstr:
    """Feature `atom.scoped`: `atom.<sem>.<scope>.<space>.<op>.<type> d, [addr], values`
    (`cas` takes the expected and the desired value)."""
    if opcode not in _ATOM_OPS:
        raise ValueError(f"atom operation {opcode!r}")
    return _op(f"atom{_ordered(sem, scope, space)}.{opcode}.{_t(ty)}", (d,), (addr, *values))


def cp_async(cache: str, dst: Addr, src: Addr, nbytes) -> PtxInstr:
    """Feature `cp.async`: `cp.async.{ca,cg}.shared.global [dst], [src], nbytes`."""
    if cache not in ("ca", "cg"):
        raise ValueError(f"cp.async cache operator {cache!r}")
    return _op(f"cp.async.{cache}.shared.global", (), (dst, src, nbytes))


_CVTA_SPACES = frozenset(("global", "shared", "local", "const", "param"))


def cvta(space: str, d, a, to: bool = False) -> PtxInstr:
    """`cvta.<space>.u64` (a `space` address to generic) or, with `to`, `cvta.to.<space>.u64`
    (generic to `space`)."""
    if space not in _CVTA_SPACES:
        raise ValueError(f"cvta state space {space!r}")
    return _op(f"cvta{'.to' if to else ''}.{space}.u64", (d,), (a,))


def dp(part: str, a_type: str, b_type: str, d, a, b, c) -> PtxInstr:
    """Feature `dp4a`: `dp4a.<a>.<b>` (part "") or `dp2a.{lo,hi}.<a>.<b>`, d = dot + c."""
    if part not in ("", "lo", "hi") or a_type not in ("s32", "u32") or \
            b_type not in ("s32", "u32"):
        raise ValueError(f"dp {part!r} {a_type} {b_type}")
    name = f"dp2a.{part}" if part else "dp4a"
    return _op(f"{name}.{a_type}.{b_type}", (d,), (a, b, c))


# ---- exact replay, tensor transfer and WMMA staging (tensor/replay.py, transfer.py,
# staging.py) -----------------------------------------------------------------------------------


# ---- the sm_90a workgroup GEMM (tensor/wgmma.py, wgmma_persistent.py): warpgroup MMA,
# register reallocation, clusters, conversions and guarded forms its pipeline spells --------
# (guarded, setp_and, ld_vec and fence_mbarrier_init are the same as the staging/transfer
# section's, cvta the core lowerings', and setmaxnreg, the wgmma_* forms and ld_vec's guard
# the FP8 pipeline's: one copy of each stays when the sections meet)
SPACES = SPACES | {".shared::cluster"}        # a cluster peer's shared window (`mapa`)


def guarded(ins: PtxInstr, p: str, negated: bool = False) -> PtxInstr:
    """`ins` under the predicate guard `@p` (`@!p` when `negated`)."""
    return ins.replaced(guard=p, negated=negated)


def setp_and(compare: str, ty: str, p, a, b, c) -> PtxInstr:
    """`setp.<compare>.and.<type> p, a, b, c`: p = (a compare b) and c."""
    if compare not in COMPARES:
        raise ValueError(f"setp comparison {compare!r}")
    return _op(f"setp.{compare}.and.{_t(ty)}", (p,), (a, b, c))


def cp_async_zfill(dst: Addr, src: Addr, src_bytes) -> PtxInstr:
    """Feature `cp.async`: `cp.async.cg.shared.global [dst], [src], 16, src_bytes`: reads
    the first `src_bytes` (a register or immediate, 0..16) and zero-fills the rest."""
    return _op("cp.async.cg.shared.global", (), (dst, src, "16", src_bytes))


def cp_async_ignore_src(dst: Addr, src: Addr, ignore) -> PtxInstr:
    """Feature `cp.async.ignore-src`: `cp.async.cg.shared.global [dst], [src], 16, p`:
    16 bytes copied, or 16 zero bytes (src not read) where predicate p holds."""
    return _op("cp.async.cg.shared.global", (), (dst, src, "16", ignore))


def ldmatrix(d, addr: Addr, trans: bool = False) -> PtxInstr:
    """Feature `ldmatrix`: `ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 {d..},
    [addr]`, one 8x8 matrix per destination register."""
    if len(d) not in (1, 2, 4):
        raise ValueError(f"ldmatrix of {len(d)} matrices")
    name = f"ldmatrix.sync.aligned.m8n8.x{len(d)}{'.trans' if trans else ''}.shared.b16"
    return _op(name, (vec(*d),), (addr,))


def cvt_rn_x2(fmt: str, d, hi, lo) -> PtxInstr:
    """Feature `cvt.x2`: `cvt.rn.{f16x2,bf16x2}.f32 d, hi, lo` (lo in bits 0..15)."""
    if fmt not in ("f16", "bf16"):
        raise ValueError(f"cvt.rn x2 format {fmt!r}")
    return _op(f"cvt.rn.{fmt}x2.f32", (d,), (hi, lo))


def shfl_bfly(d, a, lanes: int) -> PtxInstr:
    """Feature `subgroup.sync`: `shfl.sync.bfly.b32 d, a, lanes, 31, -1` over the full warp."""
    return _op("shfl.sync.bfly.b32", (d,), (a, str(int(lanes)), "31", "-1"))


def shfl_idx(d, a, lane: int) -> PtxInstr:
    """Feature `subgroup.sync`: `shfl.sync.idx.b32 d, a, lane, 31, -1`: lane's a in every
    lane of the full warp."""
    return _op("shfl.sync.idx.b32", (d,), (a, str(int(lane)), "31", "-1"))


def cp_async_commit_group() -> PtxInstr:
    """Feature `cp.async`."""
    return _op("cp.async.commit_group")


def cp_async_wait_group(pending) -> PtxInstr:
    """Feature `cp.async`: wait until at most `pending` copy groups are in flight."""
    return _op("cp.async.wait_group", (), (pending,))




def fence_proxy_async_shared() -> PtxInstr:
    """`fence.proxy.async.shared::cta` (the row of feature wgmma; the bulk-tensor copies use
    it too): orders this thread's generic-proxy shared accesses with the async proxy's."""
    return _op("fence.proxy.async.shared::cta")


def cp_async_bulk_tensor_load(dst: str, tmap: str, coords, bar: str) -> PtxInstr:
    """A rank-len(coords) tile copy global -> shared completing on the mbarrier `bar`."""
    name = f"cp.async.bulk.tensor.{len(coords)}d.shared::cluster.global.tile" \
        ".mbarrier::complete_tx::bytes"
    return _op(name, (), (mem(dst), Addr(f"{tmap}, {vec(*coords)}"), mem(bar)))


def cp_async_bulk_tensor_store(tmap: str, coords, src: str) -> PtxInstr:
    """A rank-len(coords) tile copy shared -> global in the thread's bulk async-group."""
    name = f"cp.async.bulk.tensor.{len(coords)}d.global.shared::cta.bulk_group"
    return _op(name, (), (Addr(f"{tmap}, {vec(*coords)}"), mem(src)))


def cp_async_bulk_commit_group() -> PtxInstr:
    return _op("cp.async.bulk.commit_group")


def cp_async_bulk_wait_group(pending, read: bool = False) -> PtxInstr:
    """Wait until at most `pending` of this thread's bulk async-groups are in flight;
    `read`: only until the older groups have read their shared sources."""
    return _op(f"cp.async.bulk.wait_group{'.read' if read else ''}", (), (pending,))


def cvt_pack(to: str, d, hi, lo) -> PtxInstr:
    """`cvt.rn.{f16x2,bf16x2}.f32 d, hi, lo`: two f32 rounded once each into one packed
    word, `lo` in the low half (feature f16x2; bf16x2: cvt.bf16)."""
    if to not in ("f16x2", "bf16x2"):
        raise ValueError(f"packed cvt to {to!r}")
    return _op(f"cvt.rn.{to}.f32", (d,), (hi, lo))


def cp_async_bulk_prefetch_l2(addr: Addr, nbytes) -> PtxInstr:
    """Feature cp.async.bulk.tensor: ask L2 for `nbytes` (a multiple of 16) at the
    16-byte-aligned global `addr`."""
    return _op("cp.async.bulk.prefetch.L2.global", (), (addr, nbytes))


def barrier_cluster_arrive() -> PtxInstr:
    """Feature wgmma (clusters): this thread's arrival at the cluster barrier, releasing
    its earlier writes to the cluster."""
    return _op("barrier.cluster.arrive.release")


def barrier_cluster_wait() -> PtxInstr:
    """Feature wgmma (clusters): wait for every thread of the cluster to arrive, acquiring
    their writes."""
    return _op("barrier.cluster.wait.acquire")


def mapa(d, a, rank) -> PtxInstr:
    """Feature wgmma (clusters): `a` (this workgroup's shared window) as the address of the
    same location in the shared memory of cluster workgroup `rank`."""
    return _op("mapa.shared::cluster.u32", (d,), (a, rank))


def mbarrier_arrive_cluster(bar: str) -> PtxInstr:
    """Feature wgmma (clusters): arrive on `bar`, an address `mapa` gave (possibly another
    workgroup's barrier), with the default semantics (release, CTA scope), the form
    CUTLASS's cluster pipelines use: `.release.cluster` costs ptxas 13.0 a
    MEMBAR.ALL.GPU before every arrive (docs/internals/measurements.md)."""
    return _op("mbarrier.arrive.shared::cluster.b64", ("_",), (mem(bar),))


# ---- tile values: the scalar forms of the canonical replay (frontend/lower_tile.py) --------
_ROUNDED = frozenset(("add", "sub", "mul", "div"))


def float_rn(opcode: str, ty: str, d, a, b) -> PtxInstr:
    """`add.rn` / `sub.rn` / `mul.rn` / `div.rn` on f32/f64: rounded once to nearest even;
    the explicit rounding keeps ptxas from contracting a mul and an add into an fma."""
    if opcode not in _ROUNDED or ty not in ("f32", "f64"):
        raise ValueError(f"{opcode}.rn.{ty} is not a rounded float operation")
    return _op(f"{opcode}.rn.{ty}", (d,), (a, b))


def fma_rn(ty: str, d, a, b, c) -> PtxInstr:
    """`fma.rn.f32` / `.f64`: a*b + c rounded once."""
    if ty not in ("f32", "f64"):
        raise ValueError(f"fma.rn.{ty}")
    return _op(f"fma.rn.{ty}", (d,), (a, b, c))


def ex2_approx_ftz(d, a) -> PtxInstr:
    """`ex2.approx.ftz.f32`: 2^a (max 2 ulp, subnormals flushed), every PTX target."""
    return _op("ex2.approx.ftz.f32", (d,), (a,))
