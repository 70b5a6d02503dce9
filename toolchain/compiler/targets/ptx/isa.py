"""The PTX instruction table: every target-dependent instruction form, one row each.

A row names the form's spelling (as PTX writes the opcode; `{a,b}` lists alternatives),
its operand classes, the oldest PTX ISA and SM generation that have it, and the feature
name lowerings and the optimizer ask for. The registry's `Capabilities`
(targets/__init__.py, `--print-target`) and `PtxProfile.has` / `PtxProfile.need` are
both computed from these rows, so a fact is written once: a lowering asks
`em.profile.has("cp.async")`, the optimizer asks `analyses.target.has("L1::evict_last")`.

Operand classes: `p` predicate, `r16/r32/r64` integer registers, `f32/f64` float
registers, `b16x2` packed pairs, `imm` immediate, `[space]` an address in that state
space, `{..}` a vector of registers, `desc` a 64-bit matrix or tensor-map descriptor,
`label` a branch target, `-` no operand. `only`: the SM generations that have the form at all (the
arch-specific `a` families); `specific`: needs an arch-specific `a` target; `real`: the
backend uses the form only on a real `sm_` target (ptxas checks it), never on a virtual
`compute_` one.
Sources: PTX ISA 9.0 "PTX ISA Notes" and "Target ISA Notes" of each instruction.
"""
from __future__ import annotations

from ....records import dataclass


@dataclass(frozen=True)
class Form:
    feature: str
    spelling: str
    operands: tuple[str, ...]
    isa: tuple[int, int]
    sm: int
    only: tuple[int, ...] = ()
    specific: bool = False
    real: bool = False


FORMS: tuple[Form, ...] = (
    # subgroups (warp-synchronous forms: activemask arrived in 6.2, the .sync forms in 6.0)
    Form("subgroup.sync", "activemask.b32", ("r32",), (6, 2), 30),
    Form("subgroup.sync", "shfl.sync.{up,down,bfly,idx}.b32", ("r32", "r32", "r32", "imm",
                                                                "r32"), (6, 2), 30),
    Form("subgroup.sync", "vote.sync.{all,any,ballot}", ("p|r32", "p", "r32"), (6, 2), 30),
    Form("redux.sync", "redux.sync.{add,min,max}.{u32,s32}", ("r32", "r32", "r32"),
         (7, 0), 80),
    # atomics, conversions, packed arithmetic
    Form("atom.scoped", "atom.{sem}.{cta,gpu,sys}.{global,shared}.{op}.{type}",
         ("r|f", "[global|shared]", "r|f"), (6, 0), 70),
    Form("cvt.bf16", "cvt.rn.bf16.f32", ("r16", "f32"), (7, 0), 80),
    Form("cvt.x2", "cvt.rn.{f16x2,bf16x2}.f32", ("r32", "f32", "f32"), (7, 0), 80),
    Form("ldmatrix", "ldmatrix.sync.aligned.m8n8.x{1,2,4}{,.trans}.shared.b16",
         ("{..}", "[shared]"), (6, 5), 75),
    Form("f16x2", "{add,sub,mul,fma,min,max}.f16x2", ("b16x2", "b16x2", "b16x2"), (4, 2), 53),
    Form("dp4a", "{dp4a,dp2a.lo,dp2a.hi}.{s32,u32}.{s32,u32}", ("r32", "r32", "r32", "r32"),
         (5, 0), 61),
    # memory: cache priorities and asynchronous copies
    Form("L1::evict_last", "ld.global.L1::evict_last", ("r|f|{..}", "[global]"), (7, 4), 70),
    Form("cp.async", "cp.async.{ca,cg}.shared.global", ("[shared]", "[global]", "imm"),
         (7, 0), 80),
    Form("cp.async", "cp.async.{commit_group,wait_group}", ("imm",), (7, 0), 80),
    # the ignore-src predicate: zeros written, nothing read (one compare, where the source
    # size form makes ptxas compute an address adjustment per copy)
    Form("cp.async.ignore-src", "cp.async.cg.shared.global", ("[shared]", "[global]", "imm",
                                                             "p"), (7, 5), 80),
    Form("cp.async.bulk.tensor", "cp.async.bulk.tensor.{1-5}d.shared::cluster.global",
         ("[shared]", "[desc, {..}]", "[shared]"), (8, 0), 90),
    Form("cp.async.bulk.tensor", "cp.async.bulk.prefetch.L2.global", ("[global]", "r32"),
         (8, 0), 90),
    Form("cp.async.bulk.tensor", "fence.mbarrier_init.release.cluster", ("-",), (8, 0), 90),
    Form("fence.proxy.tensormap", "fence.proxy.tensormap::generic.{acquire,release}.gpu",
         ("[global]", "imm"), (8, 3), 90),
    Form("tensormap.replace", "tensormap.replace.tile.{field}.global.b1024",
         ("[global]", "r32|r64"), (8, 3), 90, only=(90,), specific=True, real=True),
    # warp-level MMA
    Form("warp.sync", "bar.warp.sync", ("r32",), (6, 2), 70),     # + activemask (replay)
    Form("wmma.f16", "wmma.mma.sync.aligned.{shape}.{row,col}.{row,col}.{f16,f32}.{f16,f32}",
         ("{..}", "{..}", "{..}", "{..}"), (6, 0), 70),
    Form("wmma.bf16", "wmma.mma.sync.aligned.{shape}.{row,col}.{row,col}.f32.bf16.bf16.f32",
         ("{..}", "{..}", "{..}", "{..}"), (7, 0), 80),
    Form("wmma.tf32", "wmma.mma.sync.aligned.m16n16k8.{row,col}.{row,col}.f32.tf32.tf32.f32",
         ("{..}", "{..}", "{..}", "{..}"), (7, 0), 80),
    Form("wmma.f64", "wmma.mma.sync.aligned.m8n8k4.{row,col}.{row,col}.f64.f64.f64.f64",
         ("{..}", "{..}", "{..}", "{..}"), (7, 0), 80),
    Form("wmma.i8", "wmma.mma.sync.aligned.{shape}.{row,col}.{row,col}.s32.s8.s8.s32",
         ("{..}", "{..}", "{..}", "{..}"), (6, 3), 75),
    Form("wmma.u8", "wmma.mma.sync.aligned.{shape}.{row,col}.{row,col}.s32.u8.u8.s32",
         ("{..}", "{..}", "{..}", "{..}"), (6, 3), 75),
    Form("wmma.i4", "wmma.mma.sync.aligned.m8n8k32.row.col.s32.s4.s4.s32",
         ("{..}", "{..}", "{..}", "{..}"), (6, 3), 75),
    Form("wmma.u4", "wmma.mma.sync.aligned.m8n8k32.row.col.s32.u4.u4.s32",
         ("{..}", "{..}", "{..}", "{..}"), (6, 3), 75),
    Form("wmma.b1", "wmma.mma.xor.popc.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32",
         ("{..}", "{..}", "{..}", "{..}"), (6, 3), 75),
    Form("wmma.b1.and", "wmma.mma.and.popc.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32",
         ("{..}", "{..}", "{..}", "{..}"), (7, 1), 80),
    Form("mma.sync", "mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32",
         ("{..}", "{..}", "{..}", "{..}"), (7, 0), 80),
    Form("mma.sp", "mma.sp.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32",
         ("{..}", "{..}", "{..}", "{..}", "r32", "imm"), (7, 1), 80),
    Form("mma.sp::ordered_metadata", "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col"
         ".f32.{f16,bf16}.{f16,bf16}.f32", ("{..}", "{..}", "{..}", "{..}", "r32", "imm"),
         (8, 5), 80),
    Form("mma.fp8.k32", "mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32",
         ("{..}", "{..}", "{..}", "{..}"), (8, 4), 89),
    Form("mma.fp8.k16", "mma.sync.aligned.m16n8k16.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32",
         ("{..}", "{..}", "{..}", "{..}"), (8, 7), 89),
    Form("cvt.f16x2.fp8", "cvt.rn.f16x2.{e4m3x2,e5m2x2}", ("r32", "r16"), (7, 8), 89),
    Form("mma.block_scale", "mma.sync.aligned.kind::{mxf8f6f4,mxf4nvf4}.block_scale"
         ".scale_vec::{1X,2X,4X}.m16n8k{32,64}.row.col.f32.{a}.{b}.f32.ue8m0",
         ("{..}", "{..}", "{..}", "{..}", "r32", "{..}", "r32", "{..}"), (8, 8), 120,
         only=(120, 121), specific=True, real=True),
    # warpgroup MMA (sm_90a), with the forms the pipeline around it spells: fences and
    # groups, register reallocation, and the clusters of its paired mode (tensor/wgmma.py)
    Form("wgmma", "wgmma.{fence,commit_group,wait_group}.sync.aligned", ("imm",), (8, 0), 90,
         only=(90,), specific=True),
    Form("wgmma", "setmaxnreg.{inc,dec}.sync.aligned.u32", ("imm",), (8, 0), 90, only=(90,),
         specific=True),
    Form("wgmma", "barrier.cluster.{arrive.release,wait.acquire}", ("-",), (8, 0), 90),
    Form("wgmma", "mapa.shared::cluster.u32", ("r32", "r32", "r32"), (7, 8), 90),
    Form("wgmma", "ld.shared::cluster.{u32,u64}", ("r32|r64", "[shared::cluster]"), (7, 8),
         90),
    Form("wgmma", "mbarrier.arrive.shared::cluster.b64",
         ("_", "[shared::cluster]"), (8, 0), 90),
    Form("wgmma", "wgmma.mma_async.sync.aligned.m64n{N}k16.f32.{f16,bf16}.{f16,bf16}",
         ("{..}", "desc", "desc", "p", "imm", "imm", "imm", "imm"), (8, 0), 90, only=(90,),
         specific=True),
    # A from registers (register-resident tiles, frontend/tile_wgmma.py): d, {a0..a3}
    # (the m16n8k16 A fragment of each warp), b-desc, scale-d, imm-scale-a, imm-scale-b,
    # imm-trans-b (cute/arch/mma_sm90_gmma.hpp, the *_RS structs)
    Form("wgmma", "wgmma.mma_async.sync.aligned.m64n{N}k16.f32.{f16,bf16}.{f16,bf16}",
         ("{..}", "{..}", "desc", "p", "imm", "imm", "imm"), (8, 0), 90, only=(90,),
         specific=True),
    # workgroup-memory writes of the generic proxy (cp.async, st.shared) made visible to
    # wgmma's asynchronous reads
    Form("wgmma", "fence.proxy.async.shared::cta", ("-",), (8, 0), 90),
)

# ---- forms of the tensor transfer lowering (tensor/transfer.py): the store direction and the
# bulk async-group it completes in, under the tensor copy engine's feature
FORMS += (
    Form("cp.async.bulk.tensor", "cp.async.bulk.tensor.{1-5}d.global.shared::cta.bulk_group",
         ("[desc, {..}]", "[shared]"), (8, 0), 90),
    Form("cp.async.bulk.tensor", "cp.async.bulk.{commit_group,wait_group,wait_group.read}",
         ("imm",), (8, 0), 90),
)

FEATURES: dict[str, tuple[Form, ...]] = {}
for _f in FORMS:
    FEATURES[_f.feature] = FEATURES.get(_f.feature, ()) + (_f,)


def available(form: Form, isa: tuple[int, int], sm: int, specific: bool,
              virtual: bool) -> bool:
    return isa >= form.isa and sm >= form.sm and (not form.only or sm in form.only) \
        and (specific or not form.specific) and not (form.real and virtual)


_HAS: dict[tuple, bool] = {}


def has(feature: str, isa: tuple[int, int], sm: int, specific: bool = False,
        virtual: bool = False) -> bool:
    """Whether every form of `feature` exists on the target (KeyError: no such feature).
    Memoized: lowerings ask per instruction."""
    key = (feature, isa, sm, specific, virtual)
    got = _HAS.get(key)
    if got is None:
        got = _HAS[key] = all(available(f, isa, sm, specific, virtual)
                              for f in FEATURES[feature])
    return got


def requirement(feature: str) -> tuple[tuple[int, int], int]:
    """(PTX ISA, sm) the feature's forms need: the newest of its rows."""
    forms = FEATURES[feature]
    return max(f.isa for f in forms), max(f.sm for f in forms)


def features_of(isa: tuple[int, int], sm: int, specific: bool = False,
                virtual: bool = False) -> tuple[str, ...]:
    """The names of every feature the target has, in table order."""
    return tuple(n for n in FEATURES if has(n, isa, sm, specific, virtual))


# ---- resources (CUDA C++ Programming Guide, "Technical Specifications per Compute
# Capability"): sm -> (shared memory per SM, max per block (opt-in), max resident threads
# per SM)
_K = 1024
SM_LIMITS = {
    50: (64 * _K, 48 * _K, 2048), 52: (96 * _K, 48 * _K, 2048), 53: (64 * _K, 48 * _K, 2048),
    60: (64 * _K, 48 * _K, 2048), 61: (96 * _K, 48 * _K, 2048), 62: (64 * _K, 48 * _K, 2048),
    70: (96 * _K, 96 * _K, 2048), 72: (96 * _K, 96 * _K, 2048), 75: (64 * _K, 64 * _K, 1024),
    80: (164 * _K, 163 * _K, 2048), 86: (100 * _K, 99 * _K, 1536),
    87: (164 * _K, 163 * _K, 2048), 89: (100 * _K, 99 * _K, 1536),
    90: (228 * _K, 227 * _K, 2048), 100: (228 * _K, 227 * _K, 2048),
    101: (228 * _K, 227 * _K, 2048), 103: (228 * _K, 227 * _K, 2048),
    110: (228 * _K, 227 * _K, 2048), 120: (100 * _K, 99 * _K, 1536),
    121: (100 * _K, 99 * _K, 1536),
}
SUBGROUP_WIDTH = 32                   # the warp
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255
# registers per lane a tensor_matmul region keeps resident by default (tensor/resident.py):
# (from sm, budget), newest first
TUPLE_BUDGET = ((90, 96), (0, 64))
# targets whose FP8 mma.sync ptxas expands into conversions, f16 HMMAs and FADDs (their SASS):
# the split FP8 regions decode to f16 there themselves (tensor/fp8_split_mma.py)
FP8_MMA_EMULATED = (90,)
