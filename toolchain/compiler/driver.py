"""The compiler driver: wires frontend -> IR verifiers -> optimizer -> one target.

This is the only module (with cli.py) allowed to import several layers. Imports of the
layers are lazy, so a PTX compile never loads the SPIR-V, x86-64 or linker code.
"""
from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass, field

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


@dataclass
class Result:
    data: bytes | None                # the artifact (None for dump-only runs)
    warnings: list[Diagnostic]
    ir_text: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    explain: str | None = None        # the --explain report


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
    module, warnings = timer.run("frontend", compile_to_ir, path,
                                 include_dirs=tuple(opts.include_dirs),
                                 stdlib_dir=opts.stdlib_dir, gpu=gpu,
                                 source_text=source_text, target_os=host_os(opts))
    if opts.optimize or opts.release:
        from .opt.manager import OptOptions, optimize
        timer.run("optimize", optimize, module, gpu=gpu, target_info=_target_info(opts),
                  options=OptOptions(verify_each=opts.verify_each,
                                     dump_after=frozenset(opts.dump_ir_after)))
    ir_text = format_module(module) if opts.dump_ir else None
    data = timer.run("codegen", _generate, module, opts)
    explain = module.remarks.format() if opts.explain else None
    return Result(data, warnings, ir_text, timer.phases, explain)


def _target_info(opts: Options) -> dict:
    """What the optimizer may assume about the target (`opt.analyses.TargetInfo`)."""
    return {"name": opts.emit, "subgroup_width": 32 if opts.emit == "ptx" else None}


def _generate(module, opts: Options) -> bytes | None:
    if opts.emit == "ir":
        return None
    if opts.emit == "ptx":
        from .targets.ptx import emit_ptx
        from .targets.ptx.profiles import detect_local_arch, resolve_profile
        arch = opts.gpu_arch or detect_local_arch()
        profile = resolve_profile(arch, opts.ptx_version)
        return emit_ptx(module, profile, gpu_checks=opts.gpu_checks,
                        tensor_tuple_budget=opts.tensor_tuple_budget).encode()
    if opts.emit == "spirv":
        from .targets.spirv import emit_spirv
        return emit_spirv(module, gpu_checks=opts.gpu_checks)
    if opts.host_target == "aarch64-linux":       # until the target registry lands
        from .targets.arm64 import emit_object
    elif opts.host_target == "x86_64-windows":
        from .targets.x86_64.target_win64 import emit_coff as emit_object
    else:
        from .targets.x86_64 import emit_object
    obj = emit_object(module, release=opts.release)
    if opts.emit == "obj":
        return obj
    from ..linker import link_executable
    return link_executable([obj], libraries=opts.libraries, link_args=opts.link_args)


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


__all__ = ["Options", "Result", "compile_file", "default_output", "write_atomic",
           "CompileError"]
