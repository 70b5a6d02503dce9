"""The target registry: every code generator and what it can do, in one place.

A `Target` names a backend, the output kinds it serves, a lazy `generate(module, opts)`
(so a PTX compile never imports the SPIR-V or x86-64 code) and `resolve(opts)`, which
answers the capability questions for the options' architecture with a `ResolvedTarget`:
tensor instruction families (wmma, mma.sync, wgmma, TMA, cp.async), every feature of the
PTX instruction table (`features`, computed from targets/ptx/isa.py, the one place PTX
facts are written), the subgroup width, per-SM limits and, for PTX, the ISA range. The driver looks targets up here instead of
branching on names; build rules and benchmarks ask `resolve_target` (or
`mettle --print-target`) for the resolved architecture instead of reading `.target` out
of PTX. The optimizer sees only `ResolvedTarget.info()` (it never imports targets): the driver
hands it the resolved facts, features included, so an optimizer decision that depends on
the target asks `analyses.target.has(feature)`.

Registering another host target is one line (see the bottom of this file), e.g.
    register(host_target("aarch64-linux", ".arm64:emit_object"))
This module imports no backend; it must stay importable by the build rules (Python 3.9).
"""
from __future__ import annotations

from collections.abc import Callable

from ...records import dataclass, field   # (start-up: neither dataclasses nor typing)


@dataclass(frozen=True)
class Limits:
    """Per-SM and per-block resource limits (CUDA C++ Programming Guide, "Technical
    Specifications per Compute Capability")."""
    registers_per_sm: int
    max_registers_per_thread: int
    shared_memory_per_sm: int
    max_shared_memory_per_block: int
    max_threads_per_sm: int
    max_threads_per_block: int = 1024


@dataclass(frozen=True)
class Capabilities:
    wmma: bool = False
    mma_sync: bool = False
    wgmma: bool = False
    tma: bool = False
    cp_async: bool = False
    subgroup_width: int | None = None         # None: varies by device, or no subgroups
    limits: Limits | None = None
    ptx_isa: tuple[str, str] | None = None     # (oldest, newest) ISA this arch accepts
    features: tuple[str, ...] = ()            # PTX: names of targets/ptx/isa.py FEATURES


@dataclass(frozen=True)
class TargetInfo:
    """What the optimizer may know about the target (opt/analyses.TargetInfo reads it)."""
    name: str
    gpu: bool
    subgroup_width: int | None
    unrolls_loops: bool = False     # the backend's own assembler unrolls counted loops
    features: tuple[str, ...] | None = None     # None: not resolved (an arch-free info())


@dataclass(frozen=True)
class ResolvedTarget:
    target: str                   # registry name: "ptx", "spirv", "x86_64", ...
    gpu: bool
    arch: str | None = None       # PTX: the `.target` (sm_90a, compute_75)
    isa: str | None = None        # PTX: the `.version`
    ptxas_arch: str | None = None      # `ptxas --gpu-name` that checks it; None: cannot
    capabilities: Capabilities = field(default_factory=Capabilities)

    def info(self) -> TargetInfo:
        return TargetInfo(self.target, self.gpu, self.capabilities.subgroup_width,
                          lookup(self.target).unrolls_loops, self.capabilities.features)

    def as_json(self) -> dict:
        return asdict(self)


def asdict(record) -> dict:
    """`dataclasses.asdict`, imported only when asked (`--print-target`, tests)."""
    import dataclasses
    return dataclasses.asdict(record)


@dataclass(frozen=True)
class Target:
    name: str
    emits: tuple[str, ...]        # driver Options.emit kinds this target produces
    gpu: bool
    # generate(module, opts) -> (artifact bytes, in-memory form or None); imports lazily
    generate: Callable[[object, object], tuple[bytes, object]]
    resolve: Callable[[object], ResolvedTarget]
    subgroup_width: int | None = None        # fixed for every arch of the target, or None
    # ptxas unrolls counted loops with a constant stride itself (4 loads in flight measured
    # on the H200), so the optimizer's unroll-runtime only grows PTX there (bench A/B)
    unrolls_loops: bool = False

    def info(self) -> TargetInfo:
        """The arch-independent facts the optimizer gets (no arch resolution needed)."""
        return TargetInfo(self.name, self.gpu, self.subgroup_width, self.unrolls_loops)


_REGISTRY: dict[str, Target] = {}
HOST_DEFAULT = "x86_64"


def register(target: Target) -> Target:
    _REGISTRY[target.name] = target
    return target


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def lookup(name: str) -> Target:
    try:
        return _REGISTRY[name]
    except KeyError:
        from ..diagnostics import error
        raise error("E0090", f"unknown target `{name}`",
                    help="known targets: " + ", ".join(sorted(_REGISTRY))) from None


def for_options(opts) -> Target:
    """The target an Options selects: PTX and SPIR-V by emit kind, else the host target
    (`opts.host_target` when a driver option names one, x86-64 by default)."""
    for t in _REGISTRY.values():
        if t.gpu and opts.emit in t.emits:
            return t
    return lookup(getattr(opts, "host_target", None) or HOST_DEFAULT)


def resolve_target(name: str = "ptx", gpu_arch: str | None = None,
                   ptx_version: str | None = None) -> ResolvedTarget:
    """Library form of `mettle --print-target` (raises CompileError on a bad arch)."""
    from types import SimpleNamespace
    return lookup(name).resolve(SimpleNamespace(gpu_arch=gpu_arch, ptx_version=ptx_version))


# ---- PTX ----------------------------------------------------------------------------------
PTX_SUBGROUP_WIDTH = 32           # the warp: ptx/isa.py SUBGROUP_WIDTH (tests/ptx/test_isa_table.py)
MIN_PTXAS_SM = 75                 # ptxas 13 refuses older targets (notes/facts.md)


def _ptx_resolve(opts) -> ResolvedTarget:
    # profiles.py imports no emitter code (targets/ptx/__init__.py loads those lazily).
    from .ptx import isa
    from .ptx.profiles import MAX_ISA, min_isa, resolve_profile
    p = resolve_profile(opts.gpu_arch, opts.ptx_version)
    shared, per_block, threads = isa.SM_LIMITS[p.sm]
    lo = min_isa(p.sm, p.arch_specific)
    has = isa.features_of(p.isa, p.sm, p.arch_specific, p.virtual)
    caps = Capabilities(
        wmma="wmma.f16" in has, mma_sync="mma.sync" in has, wgmma="wgmma" in has,
        tma="cp.async.bulk.tensor" in has, cp_async="cp.async" in has,
        subgroup_width=PTX_SUBGROUP_WIDTH,
        limits=Limits(isa.REGISTERS_PER_SM, isa.MAX_REGISTERS_PER_THREAD, shared, per_block,
                      threads),
        ptx_isa=(f"{lo[0]}.{lo[1]}", f"{MAX_ISA[0]}.{MAX_ISA[1]}"), features=has)
    ptxas = None if p.sm < MIN_PTXAS_SM else f"sm_{p.sm}{'a' if p.arch_specific else ''}"
    return ResolvedTarget("ptx", True, p.target, p.version, ptxas, caps)


def _ptx_generate(module, opts):
    """(PTX text, the ptx.instr.PtxModule it was printed from)."""
    from .ptx.emitter import lower_ptx     # (not via ptx.__getattr__: no importlib)
    from .ptx.printer import format_module
    from .ptx.profiles import resolve_profile
    profile = resolve_profile(opts.gpu_arch, opts.ptx_version)
    objects = lower_ptx(module, profile, gpu_checks=opts.gpu_checks,
                        tensor_tuple_budget=opts.tensor_tuple_budget,
                        fp_contract=getattr(opts, "fp_contract", True),
                        wmma_staging=getattr(opts, "wmma_staging", True))
    return format_module(objects).encode(), objects


# ---- SPIR-V and hosts ---------------------------------------------------------------------
def _spirv_generate(module, opts):
    # Named by module string, as the host targets are: importing the registry (the driver)
    # does not make a program, or a test, depend on the SPIR-V backend's sources. A test
    # that compiles SPIR-V imports `toolchain.compiler.targets.spirv` itself.
    import importlib
    emit_spirv = importlib.import_module("toolchain.compiler.targets.spirv").emit_spirv
    return emit_spirv(module, gpu_checks=opts.gpu_checks), None


def host_target(name: str, emit_object: str) -> Target:
    """A host (CPU) target: `emit_object` (".module:function", relative to this package) takes
    `(module, release=...)` and returns an object file; `--build` links it."""
    def generate(module, opts):
        import importlib
        mod, fn = emit_object.split(":")  # relative: installed, the package is `mettle`
        emit = getattr(importlib.import_module(mod, __name__), fn)
        return emit(module, release=opts.release), None
    return Target(name, ("obj", "exe"), False, generate,
                  lambda opts: ResolvedTarget(name, False))


register(Target("ptx", ("ptx",), True, _ptx_generate, _ptx_resolve,
                subgroup_width=PTX_SUBGROUP_WIDTH, unrolls_loops=True))
register(Target("spirv", ("spirv",), True, _spirv_generate,
                lambda opts: ResolvedTarget("spirv", True)))
register(host_target("x86_64", ".x86_64:emit_object"))
register(host_target("aarch64-linux", ".arm64:emit_object"))
register(host_target("x86_64-windows",
                     ".x86_64.target_win64:emit_coff"))
