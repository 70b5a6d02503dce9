"""The compiler driver: wires frontend -> IR verifiers -> optimizer -> one target.

This is the only module (with cli.py) allowed to import several layers. Imports of the
layers are lazy, so a PTX compile never loads the SPIR-V, x86-64 or linker code.
"""
from __future__ import annotations

import gc
import os
import time
from ..records import dataclass, field   # cheaper to define than dataclasses'

from .diagnostics import CompileError, Diagnostic

EMIT_KINDS = ("ptx", "spirv", "obj", "exe", "ir")
SUFFIX = {"ptx": ".ptx", "spirv": ".spv", "obj": ".o", "exe": ""}


@dataclass
class Options:
    emit: str = "obj"                 # one of EMIT_KINDS
    output: str | None = None
    optimize: bool = False
    release: bool = False
    gpu_arch: str | None = None
    ptx_version: str | None = None
    gpu_checks: bool = False
    tensor_tuple_budget: int = 0
    wmma_staging: bool = True         # --gpu-wmma-staging=off: K loops load WMMA operands directly
    fp_contract: bool = True          # --fp-contract=off: every f32/f64 add/sub/mul `.rn`
    include_dirs: list[str] = field(default_factory=list)
    stdlib_dir: str | None = None
    link_args: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    dump_ir: bool = False
    dump_spirv: bool = False
    verify_each: bool = False
    profile: bool = False
    host_target: str | None = None    # registry name of the host target (--target); None: x86_64
    dump_ir_after: tuple[str, ...] = ()   # --dump-ir=after:PASS|all (stderr, per pass)
    explain: bool = False                 # --explain: the remarks report on stdout
    test_mode: bool = False               # `mettle test`: keep @test fns, add the runner
    consts: tuple = ()                    # --const NAME=VALUE pairs (frontend/const_override)
    tile_mma: bool = True                 # --gpu-tile-mma=off: tile matmuls replay (tile_mma.py)
    tile_wgmma: bool = True               # --gpu-tile-wgmma=off: register tiles on mma.sync
    tile_wgmma_a: str = "shared"          # --gpu-tile-wgmma-a=registers: a loaded A tile
    #                                       kept in registers, not workgroup memory
    tile_rescale_skip: bool = True        # --gpu-tile-rescale-skip=off (tile_frag.py)
    tile_copy_wait: str = "load"          # --gpu-tile-copy-wait=matmul (tile_frag.py)


@dataclass
class Result:
    data: bytes | None                # the artifact (None for dump-only runs)
    warnings: list[Diagnostic]
    ir_text: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    explain: str | None = None        # the --explain report
    objects: object | None = None     # the target's in-memory form (PTX: ptx.instr.PtxModule)
    signature: dict | None = None     # GPU output: the kernels' typed parameters (signature.py)
    test_plan: object | None = None   # `mettle test`: frontend.testing.TestPlan


class _Timer:
    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    def run(self, name: str, fn, *args, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0


def host_os(opts: Options) -> str:
    """The operating system of the host target: picks std/*.windows|linux variants."""
    return "windows" if (opts.host_target or "").endswith("windows") else "linux"


def default_output(source: str, emit: str) -> str:
    """LANGUAGE.md §12.5: x.mettle -> x.ptx / x.spv / x.o / x."""
    stem = os.path.splitext(os.path.basename(source))[0]
    return stem + SUFFIX[emit]


def compile_file(path: str, opts: Options, source_text: str | None = None) -> Result:
    """Compile one entry file. The cyclic garbage collector is paused meanwhile: a compile
    makes many short-lived objects and few cycles, and collection cost ~10% of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _compile_file(path, opts, source_text)
    finally:
        if enabled:
            gc.enable()


def _compile_file(path: str, opts: Options, source_text: str | None) -> Result:
    from .frontend.api import compile_to_ir     # returns verified IR
    from .ir import format_module

    timer = _Timer()
    gpu = opts.emit in ("ptx", "spirv")
    optimizing = opts.optimize or opts.release
    module, warnings = timer.run("frontend", compile_to_ir, path,
                                 include_dirs=tuple(opts.include_dirs),
                                 stdlib_dir=opts.stdlib_dir, gpu=gpu,
                                 source_text=source_text, target_os=host_os(opts),
                                 ssa=gpu and optimizing, test_mode=opts.test_mode,
                                 device_target=opts.emit if gpu else None,
                                 consts=tuple(opts.consts), tile_mma=_tile_mma(opts),
                                 tile_wgmma=_tile_wgmma(opts),
                                 tile_wgmma_a=opts.tile_wgmma_a,
                                 tile_rescale_skip=opts.tile_rescale_skip,
                                 tile_copy_wait=opts.tile_copy_wait,
                                 checks=not gpu and not opts.release)
    if gpu and not module.kernels():      # located at the file (callgraph's E0401 is not)
        from .diagnostics import Span
        raise CompileError(Diagnostic(
            "E0401", f"`{path}` has no kernel; GPU output needs at least one", Span(path, 1, 1),
            help="declare an entry point with `kernel name(...) { ... }`"))
    if optimizing and gpu:
        # the device verifiers judge the program as written, so -O never accepts what a
        # plain build refuses (a collective under varying control that -O would delete)
        from .ir.callgraph import device_program
        timer.run("verify", device_program, module)
    signature = None
    if gpu:                       # read before the optimizer: the source's parameter types
        from .signature import of_module
        signature = of_module(module, opts.emit)
    if optimizing:
        from .opt.manager import OptOptions, optimize
        module.opt_level = 1      # host backends allocate registers in optimised modules
        timer.run("optimize", optimize, module, gpu=gpu, target_info=_target_info(opts),
                  options=OptOptions(verify_each=opts.verify_each,
                                     dump_after=frozenset(opts.dump_ir_after),
                                     timings=timer.phases if opts.profile else None))
    else:
        timer.run("optimize", _honour_directives, module, opts, gpu)
    ir_text = format_module(module) if opts.dump_ir else None
    data, objects = timer.run("codegen", _generate, module, opts, path)
    explain = module.remarks.format() if opts.explain else None
    return Result(data, warnings, ir_text, timer.phases, explain, objects, signature,
                  getattr(module, "test_plan", None))


def dependencies(path: str, opts: Options) -> list[str]:
    """Every source file a compile of `path` with `opts` reads: the entry and each module it
    imports, transitively (parsed, not compiled), in dependency order. The Python runtime's
    cache keys on their contents."""
    from .frontend.modules import load_program
    program = load_program(path, tuple(opts.include_dirs), opts.stdlib_dir,
                           target_os=host_os(opts))
    return [m.path for m in program.modules]


def check_file(path: str, opts: Options, gpu: bool | None = None) -> list[Diagnostic]:
    """`mettle check`: the frontend and, for GPU code, the shared device verifiers
    (ir.device_program: call graph, uniformity, async groups); no optimizer, no code
    generation, no output. Returns the warnings; raises CompileError on any error.

    `gpu` None decides from the file: a module that declares a kernel is GPU code; any
    other is checked as host code, and a library that only compiles as device code (no
    kernel of its own, GPU built-ins in its helpers) passes when the GPU frontend accepts it.
    """
    from .frontend.api import compile_to_ir
    from .frontend.parser import parse_source

    def frontend(as_gpu: bool):
        return compile_to_ir(path, include_dirs=tuple(opts.include_dirs),
                             stdlib_dir=opts.stdlib_dir, gpu=as_gpu,
                             target_os=host_os(opts))

    if gpu is None:
        with open(path, encoding="utf-8", errors="replace") as f:
            tree = parse_source(f.read(), path)
        gpu = any(getattr(d, "is_kernel", False) and not getattr(d, "is_extern", False)
                  for d in tree.items)
    if gpu:
        from .ir import device_program
        module, warnings = frontend(True)
        device_program(module)
        return warnings
    try:
        return frontend(False)[1]
    except CompileError as host_error:
        try:
            return frontend(True)[1]
        except CompileError:
            raise host_error from None


def _honour_directives(module, opts: Options, gpu: bool) -> None:
    """Without -O only `@unroll(n)` loops run passes (opt.manager.honour_directives); the
    optimizer is imported only for a module that has one (start-up: ~20 modules)."""
    if not any(ins.op == "cbr" and ins.attrs.get("unroll")
               for fn in module.functions.values() for ins in fn.instructions()):
        return
    from .opt.manager import OptOptions, honour_directives
    honour_directives(module, gpu=gpu, target_info=_target_info(opts),
                      options=OptOptions(verify_each=opts.verify_each,
                                         dump_after=frozenset(opts.dump_ir_after)))


def _tile_mma(opts: Options) -> bool:
    """Tile matmuls on warp MMA (frontend/tile_mma.py): a PTX profile with the m16n8k16
    f16/bf16 `mma.sync` form, unless --gpu-tile-mma=off."""
    if opts.emit != "ptx" or not opts.tile_mma:
        return False
    try:
        features = _target_info(opts).features
    except CompileError:            # a bad --gpu-arch: reported by the backend
        return False
    return features is not None and "mma.sync" in features


def _tile_wgmma(opts: Options) -> bool:
    """Register-resident tile matmuls on wgmma with A from registers (frontend/tile_plan.py,
    docs/internals/tile-wgmma.md): unless --gpu-tile-wgmma=off, with the warp MMA form on
    and a PTX profile with the `wgmma` feature (sm_90a)."""
    if not opts.tile_wgmma or not _tile_mma(opts):
        return False
    return "wgmma" in _target_info(opts).features


def _target_info(opts: Options):
    """What the optimizer may assume about the target (`opt.analyses.TargetInfo` reads
    `name` and `subgroup_width`: 32 on PTX, None on SPIR-V and hosts). A GPU target is
    resolved for the options' architecture, so the optimizer also learns its instruction
    features (`has("L1::evict_last")`)."""
    from .targets import for_options
    target = for_options(opts)
    return target.resolve(opts).info() if target.gpu else target.info()


def _generate(module, opts: Options, path: str | None = None
              ) -> tuple[bytes | None, object | None]:
    """(artifact, the target's in-memory form) from the registry's target for `opts`."""
    if opts.emit == "ir":
        return None, None
    from .targets import for_options
    if opts.emit in ("obj", "exe"):
        from .ir.checks import CHECK_EXIT_CODE, expand_checks   # checks -> compare, branch
        from .frontend.testing import CHECK_FAILED_STATUS
        status = CHECK_FAILED_STATUS if opts.test_mode else CHECK_EXIT_CODE
        if not opts.release and host_os(opts) == "linux":
            from .ir.stack_guard import install_stack_guard   # a message, not a bare SIGSEGV
            install_stack_guard(module, status)
        expand_checks(module, write_name="_write" if host_os(opts) == "windows" else "write",
                      exit_code=status)
    data, objects = for_options(opts).generate(module, opts)
    if opts.emit == "exe":
        from ..linker import link_executable
        try:
            data = link_executable([data], libraries=opts.libraries,
                                   link_args=opts.link_args, names=[str(path or module.name)])
        except CompileError as e:
            raise CompileError([_locate_link_error(d, module) for d in e.diagnostics]) \
                from None
    return data, objects


def _locate_link_error(d: Diagnostic, module) -> Diagnostic:
    """A link symbol the program declared `extern` (undefined, or a thread-local import)
    points at that declaration."""
    import re
    m = re.match(r"(?:undefined )?symbol '([^']+)'", d.message) if d.span is None else None
    if m is None:
        return d
    for fn in module.functions.values():
        if fn.is_extern and (fn.link_name or fn.name) == m.group(1) and fn.span is not None:
            return Diagnostic(d.code, d.message + f" (declared `extern fn {fn.name}` here)",
                              fn.span, d.severity, d.help)
    for g in module.globals.values():
        if g.linkage == "import" and (g.link_name or g.name) == m.group(1) and g.span:
            return Diagnostic(d.code, d.message + f" (declared `extern var {g.name}` here)",
                              g.span, d.severity, d.help)
    return d


def _create_temp(directory: str) -> tuple[int, str]:
    """A new `.mettle-*` file in `directory`, opened exclusively (like tempfile.mkstemp,
    whose import costs a few ms of every compile: shutil, random, hashlib, bz2, lzma)."""
    for attempt in range(100):
        tmp = os.path.join(directory, f".mettle-{os.getpid()}-{time.monotonic_ns()}-{attempt}")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {directory}")


def write_atomic(path: str, data: bytes, executable: bool = False) -> None:
    """Write to a temporary name in the same directory, then rename: never a partial file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = _create_temp(directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, (0o777 if executable else 0o666) & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


__all__ = ["Options", "Result", "check_file", "compile_file", "default_output",
           "dependencies", "write_atomic",
           "CompileError"]
