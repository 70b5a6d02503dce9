"""The IR opcode table: one row per operation, read by the builder, verifier, printer and passes.

Operands are listed positionally; compile-time configuration lives in `attrs` (a dict of
str/int/bool/tuple values, printed sorted). Flags:
  terminator   ends a block (br, cbr, ret, unreachable)
  effects      writes memory or is otherwise observable; never removed by dead-code passes
  reads        reads memory (ordering matters relative to `effects`)
  collective   the scope at which every live work-item must execute it uniformly
               ("workgroup" or "subgroup"), checked by the uniformity verifier
  where        "any", "device" (kernels and their helpers only) or "host"

GPU operations are target-neutral: address spaces, memory order/scope, collectives and
launch geometry are attributes here; no PTX or SPIR-V spelling appears in this layer.
"""
from __future__ import annotations

from ...records import dataclass   # (start-up: not the dataclasses module)


@dataclass(frozen=True)
class OpInfo:
    name: str
    operands: str = ""          # informal operand list, for docs and the printer
    terminator: bool = False
    effects: bool = False
    reads: bool = False
    collective: str | None = None
    where: str = "any"
    doc: str = ""


def _rows() -> list[OpInfo]:
    R = OpInfo
    return [
        # control flow
        R("br", "target", terminator=True, doc="jump to attrs.target"),
        R("cbr", "cond", terminator=True, doc="branch on bool to attrs then/else"),
        R("ret", "[value]", terminator=True),
        R("unreachable", "", terminator=True, effects=True),
        # SSA (optimizer only): operand i flows in from predecessor targets[i]; phis open
        # their block; opt/out_of_ssa.py removes them before any backend runs
        R("phi", "values... (from targets...)", doc="SSA merge of the incoming values"),
        # arithmetic: signedness comes from the operand type; float ops are IEEE
        *(R(n, "a b") for n in ("add", "sub", "mul", "div", "rem", "and", "or", "xor",
                                "shl", "shr", "min", "max")),
        R("neg", "a"), R("not", "a", doc="bitwise complement; logical not is cmp eq 0"),
        R("cmp", "a b", doc="attrs.pred in eq ne lt le gt ge; result bool"),
        R("select", "cond a b"),
        R("convert", "a", doc="numeric/bool value conversion to the result type"),
        R("bitcast", "a", doc="same-size reinterpretation (ptr<->ptr, fnptr<->ptr)"),
        R("ptrtoint", "a"), R("inttoptr", "a"),
        R("addrspacecast", "a", doc="pointer to the same pointee in another space"),
        # memory
        R("load", "ptr", reads=True),
        R("store", "ptr value", effects=True),
        R("ptradd", "ptr index", doc="ptr + index * sizeof(pointee); index is i64"),
        R("byteadd", "ptr offset", doc="ptr + offset bytes; offset is i64"),
        R("fieldptr", "ptr", doc="address of struct field attrs.index"),
        R("alloca", "", doc="stack/private slot of attrs.type; result ptr<type, private>"),
        R("local.get", "local", reads=True),
        R("local.set", "local value", effects=True),
        R("memcpy", "dst src", effects=True, reads=True, doc="attrs.size bytes"),
        # calls
        R("call", "callee args...", effects=True, reads=True),
        R("call_indirect", "fnptr args...", effects=True, reads=True),
        # GPU: geometry and storage
        R("gpu.index", "", where="device", doc="attrs kind(thread|block|block_dim|grid_dim) "
          "axis(x|y|z); result u32"),
        R("gpu.alloc", "", where="device", doc="static attrs.space array of attrs.count "
          "attrs.elem; result ptr<elem, space>"),
        R("gpu.dynamic_shared", "", where="device", doc="view of the launch-sized arena "
          "(attrs.align: its base alignment in bytes when more than 16)"),
        R("gpu.barrier", "", effects=True, reads=True, collective="workgroup",
          where="device", doc="attrs regions (workgroup/global), order"),
        # GPU: scoped atomics on an element pointer
        R("atomic.load", "ptr", effects=True, reads=True, where="device"),
        R("atomic.store", "ptr value", effects=True, where="device"),
        R("atomic.rmw", "ptr value", effects=True, reads=True, where="device",
          doc="attrs.op in add sub min max and or xor exchange"),
        R("atomic.cmpxchg", "ptr expected desired", effects=True, reads=True,
          where="device"),
        # GPU: asynchronous global->workgroup staging
        R("async.copy", "dst src count", effects=True, reads=True, where="device",
          doc="attrs transaction(4|8|16) cache(all|global)"),
        R("async.commit", "", effects=True, where="device"),
        R("async.wait", "", effects=True, reads=True, where="device", doc="attrs.pending"),
        # GPU: subgroup collectives
        R("subgroup.local_id", "", where="device"),
        R("subgroup.size", "", where="device"),
        R("subgroup.broadcast", "value lane", collective="subgroup", where="device"),
        R("subgroup.reduce", "value", collective="subgroup", where="device",
          doc="attrs.op add|min|max"),
        R("subgroup.scan", "value", collective="subgroup", where="device",
          doc="attrs.inclusive"),
        R("subgroup.shuffle", "value lane", collective="subgroup", where="device"),
        R("subgroup.ballot", "pred word", collective="subgroup", where="device"),
        R("subgroup.any", "pred", collective="subgroup", where="device"),
        R("subgroup.all", "pred", collective="subgroup", where="device"),
        # GPU: math and bit intrinsics (also legal in device helpers)
        *(R(f"math.{n}", "a", where="device")
          for n in ("sqrt", "rsqrt", "fabs", "sin", "cos", "log", "exp")),
        # GPU: the scalar forms tile values lower to (frontend/lower_tile.py): exactly
        # rounded f32 arithmetic no backend contracts, fma, the profile's 2^x
        R("math.rn", "a b", where="device", doc="attrs.op add|sub|mul|div: one IEEE f32 "
          "operation rounded to nearest even, never contracted into an fma"),
        R("math.fma", "a b c", where="device", doc="a*b + c rounded once"),
        R("math.exp2", "a", where="device", doc="2^a: PTX ex2.approx.ftz.f32"),
        R("tile.uniform", "operands...", effects=True, collective="workgroup",
          where="device", doc="marks a tile operation attrs.what: it and its operands "
          "(named by attrs.roles) must be workgroup-uniform; emits no code"),
        R("tile.mma", "a0 a1 a2 a3 b0 b1 c0 c1 c2 c3", collective="subgroup",
          where="device", doc="one warp m16n8k16 product of packed 16-bit pairs (attrs.format "
          "f16|bf16) plus f32 c, fragments in the PTX ISA layout: vec<4 x f32> "
          "(frontend/tile_mma.py; emitted only for targets with mma.sync)"),
        # register-resident tiles (frontend/tile_frag.py; targets with mma.sync only)
        R("tile.bfly", "value", collective="subgroup", where="device", doc="the 32-bit "
          "value of lane (this lane xor attrs.lanes), every lane of the warp active"),
        R("tile.ldmatrix", "ptr", reads=True, collective="subgroup", where="device",
          doc="four 8x8 16-bit matrices from workgroup memory (lane l gives row l%8 of "
          "matrix l/8), attrs.trans: vec<4 x u32> in the mma fragment layout"),
        R("tile.cp16", "dst src bytes", effects=True, reads=True, where="device",
          doc="asynchronous 16-byte global->workgroup copy of which the first `bytes` "
          "(0..16) are read and the rest zero-filled (async.commit/async.wait group it)"),
        R("tile.pack", "lo hi", where="device", doc="two f32 rounded to nearest even into "
          "attrs.format f16|bf16 halves of one u32 (lo in bits 0..15)"),
        # the wgmma form of register-resident tiles (frontend/tile_wgmma.py; sm_90a only)
        R("tile.wgmma", "a... ptr c...", reads=True, collective="workgroup", where="device",
          doc="c + a*b for attrs.slabs 64-row blocks of each warpgroup: a the A fragments "
          "(4 packed 16-bit words per 16-wide k step and slab) or, with attrs.a_steps, one "
          "pointer to this warpgroup's rows of a shared A tile (attrs.a_slab bytes to the "
          "next slab, attrs.a_lbo/a_sbo/a_swizzle), b the shared tile at ptr "
          "(attrs.swizzle-byte rows, attrs.lbo/sbo/trans, attrs.steps: byte offset per k "
          "step), c attrs.n/2 f32 per slab or none (a zero start): vec<slabs*n/2 x f32>, "
          "complete when it returns"),
        R("tile.need_shared", "", effects=True, where="device",
          doc="stops the kernel (a trap) unless the launch gave at least attrs.bytes of "
          "dynamic workgroup memory, where its tiles live (frontend/tile_plan.py)"),
        R("tile.proxy_fence", "", effects=True, reads=True, where="device",
          doc="this work-item's workgroup-memory writes become visible to the tensor "
          "cores' asynchronous reads (before the barrier that publishes them)"),
        R("cvt.h2f", "a", where="device", doc="u16 half bits -> f32"),
        R("cvt.f2h", "a", where="device", doc="f32 -> u16 half bits, round to nearest"),
        R("cvt.bf2f", "a", where="device", doc="u16 bf16 bits -> f32"),
        R("cvt.f2bf", "a", where="device", doc="f32 -> u16 bf16 bits, round to nearest"),
        R("int.dp4a", "a b c", where="device", doc="attrs.signed"),
        R("int.dp2a", "a b c", where="device", doc="attrs.signed, attrs.hi"),
        R("int.prmt", "a b sel", where="device"),
        R("half2.add", "a b", where="device"), R("half2.mul", "a b", where="device"),
        R("half2.fma", "a b c", where="device"),
        R("half2.lo", "a", where="device", doc="low half of packed u32 -> f32"),
        R("half2.hi", "a", where="device", doc="high half of packed u32 -> f32"),
        R("half2.pack", "lo hi", where="device", doc="two f32 -> packed u32"),
        R("vec.load4", "src dst", effects=True, reads=True, where="device",
          doc="128-bit load of 4 elements at src, stored to dst"),
        R("vec.store4", "dst src", effects=True, reads=True, where="device",
          doc="4 elements read from src, one 128-bit store to dst"),
        R("vec.extract", "vector", doc="element attrs.index of a vec<N x T> value"),
        R("vec.insert", "vector value", doc="the vector with element attrs.index replaced"),
        R("debug.print", "fmt args...", effects=True, where="device"),
        R("debug.assert", "cond", effects=True, where="device"),
        # GPU: cooperative tensor operations (descriptor in attrs.desc, ir/tensor.py;
        # operand meanings in attrs.roles; scope in the descriptor, checked by uniformity)
        R("tensor.mma", "a b c d [roles...]", effects=True, reads=True,
          collective="subgroup", where="device", doc="one whole D = A*B + C tile"),
        R("tensor.matmul", "a b c d row column m n k [roles...]", effects=True, reads=True,
          collective="subgroup", where="device", doc="one bounded region of D = A*B + C"),
        R("tensor.epilogue", "d [roles...]", effects=True, reads=True,
          collective="subgroup", where="device", doc="D = act(alpha*D + beta*bias)"),
        # GPU: accumulator residency groups formed by opt/tensor_residency.py; a backend
        # either keeps the group's tile in registers or replays every update from memory
        R("tensor.transfer", "dst src coordinate0.. [view]", effects=True, reads=True,
          collective="workgroup", where="device",
          doc="one rank-1..5 tile between global and workgroup memory (ir/transfer.py)"),
        R("tensor.acc_begin", "c [ldc]", effects=True, reads=True, collective="subgroup",
          where="device", doc="attrs group kind(loop|chain): start of a residency group"),
        R("tensor.acc_commit", "d [ldd]", effects=True, reads=True, collective="subgroup",
          where="device", doc="attrs group kind: the group's tile is written to D"),
        # host: run-time checks of a non-release build (ir/checks.py expands each into a
        # compare, a branch and a call of the shared failure routine after -O; attrs.site
        # is "file:line:col"). With attrs.guarded the last operand is a bool: the check
        # applies only when it is true (opt/check_hoist.py's hoisted forms).
        R("check.index", "index length [guard]", effects=True, where="host",
          doc="fails unless 0 <= index < length (i64)"),
        R("check.range", "first end length [guard]", effects=True, where="host",
          doc="index check of first..end-1 at once: fails unless 0 <= first and "
          "end <= length (i64); reports the first failing index"),
        R("check.null", "ptr [guard]", effects=True, where="host",
          doc="fails if ptr (a pointer or function pointer) is null; attrs.what: call "
          "for the callee of an indirect call"),
        R("check.nonzero", "divisor [guard]", effects=True, where="host",
          doc="fails if the integer divisor is 0; attrs.what div|rem"),
        # host: the neutral launch operation behind `dispatch`
        R("gpu.launch", "handle gx gy gz bx by bz shared stream args...", effects=True,
          reads=True, where="host", doc="attrs.kernel names a typed kernel, or None"),
    ]


OPS: dict[str, OpInfo] = {row.name: row for row in _rows()}

CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel", "seq_cst")
SCOPES = ("work_item", "subgroup", "workgroup", "device", "system")
ATOMIC_RMW_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exchange")
CHECK_OPS = frozenset(("check.index", "check.range", "check.null", "check.nonzero"))
INDEX_KINDS = ("thread", "block", "block_dim", "grid_dim")
AXES = ("x", "y", "z")


def info(op: str) -> OpInfo:
    return OPS[op]
