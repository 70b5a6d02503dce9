"""Compile (and check) one Mettle kernel module: the `mettle_kernel` stage.

Invariants: one compile action per (source content, stdlib content, flags, compiler PEX),
run as a hermetic VenvPex process whose argv holds only sandbox-relative paths, so the
action's cache key is the same in every checkout directory. The check action (ptxas for
PTX, spirv-val for SPIR-V) is separate, so a cached compile never re-runs for a check.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional, Tuple

from pants.backend.python.util_rules.pex import VenvPexProcess
from pants.engine.addresses import Address
from pants.engine.fs import Digest, MergeDigests
from pants.engine.process import FallibleProcessResult, Process, ProcessResult
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import SourcesField
from pants.util.logging import LogLevel

from toolchain.rules.inputs import MettleInputs, MettleInputsRequest
from toolchain.rules.tools import (TOOL_ENV, MettleCompiler, PtxasTool, SpirvVal,
                                   compile_succeeded)



@dataclass(frozen=True)
class CompileKernelRequest:
    address: Address          # the mettle_kernel target (its dependencies are inputs too)
    source: SourcesField
    output_name: str          # e.g. "kernels.ptx", written at the sandbox root
    fmt: str                  # "ptx" | "spirv"
    gpu_arch: str
    optimize: bool
    ptx_version: Optional[str]
    tensor_tuple_budget: Optional[int]
    validate: bool
    spirv_target_env: str
    fp_contract: bool = True  # False: --fp-contract=off
    consts: Tuple[str, ...] = ()   # each NAME=VALUE becomes one --const


@dataclass(frozen=True)
class CompiledKernel:
    digest: Digest            # holds `path` (and its signature sidecar, when compiled here)
    path: str
    ptxas_arch: Optional[str] = None   # `ptxas --gpu-name` for PTX; None: nothing checks it


def print_target_argv(gpu_arch: str, ptx_version: Optional[str] = None) -> Tuple[str, ...]:
    """The compiler's own answer to "what does this arch resolve to" (`mettle --print-target`
    prints the registry's JSON): the plugin never re-derives target facts or re-parses
    `.target` out of PTX, and it runs the compiler as a process, never imports it."""
    argv = ("--print-target", "--gpu-arch", gpu_arch)
    return argv + (("--ptx-version", ptx_version) if ptx_version else ())


def ptxas_arch_of(print_target_stdout: bytes) -> Optional[str]:
    """`ptxas --gpu-name` from --print-target's JSON (None: ptxas cannot assemble it)."""
    return json.loads(print_target_stdout.decode()).get("ptxas_arch")


def signature_name(output_name: str) -> str:
    """The sidecar `mettle.load` reads: the kernels' typed parameters (sorts after the module,
    so a digest's first file stays the module)."""
    return output_name + ".sig.json"


def compile_argv(req: CompileKernelRequest, source: str, stdlib_root: str) -> Tuple[str, ...]:
    argv = ["--emit-ptx" if req.fmt == "ptx" else "--emit-spirv", source,
            "-o", req.output_name, "--gpu-arch", req.gpu_arch, "--stdlib", stdlib_root,
            "--emit-signature", signature_name(req.output_name)]
    if req.optimize:
        argv.append("-O")
    if req.ptx_version:
        argv += ["--ptx-version", req.ptx_version]
    if req.tensor_tuple_budget:
        argv += ["--gpu-tensor-tuple-budget", str(req.tensor_tuple_budget)]
    if not req.fp_contract:
        argv.append("--fp-contract=off")
    for item in req.consts:
        argv += ["--const", item]
    return tuple(argv)


@dataclass(frozen=True)
class SpirvCheck:
    kernel: CompiledKernel
    target_env: str


@dataclass(frozen=True)
class PtxCheck:
    kernel: CompiledKernel


@dataclass(frozen=True)
class KernelChecked:
    tool: Optional[str]       # which checker ran, None when no checker applies


@rule(desc="Compile a Mettle kernel", level=LogLevel.DEBUG)
async def compile_kernel(req: CompileKernelRequest, compiler: MettleCompiler) -> CompiledKernel:
    inputs = await Get(MettleInputs, MettleInputsRequest(req.address, req.source))
    result = await Get(FallibleProcessResult, VenvPexProcess(
        compiler.pex, argv=compile_argv(req, inputs.entry, inputs.stdlib_root),
        input_digest=inputs.digest,
        output_files=(req.output_name, signature_name(req.output_name)), extra_env=TOOL_ENV,
        description=(f"Run mettle compile {inputs.entry} -> {req.output_name} "
                     f"({req.gpu_arch})"),
        level=LogLevel.INFO))
    compile_succeeded(result, f"{req.address}: compiling {inputs.entry}")
    arch = None
    if req.fmt == "ptx":                # cached per arch: an edited kernel does not re-run it
        target = await Get(ProcessResult, VenvPexProcess(
            compiler.pex, argv=print_target_argv(req.gpu_arch, req.ptx_version),
            extra_env=TOOL_ENV, description=f"Resolve the PTX target {req.gpu_arch}",
            level=LogLevel.DEBUG))
        arch = ptxas_arch_of(target.stdout)
    kernel = CompiledKernel(result.output_digest, req.output_name, arch)
    if req.validate and req.fmt == "spirv":
        await Get(KernelChecked, SpirvCheck(kernel, req.spirv_target_env))
    elif req.validate:
        await Get(KernelChecked, PtxCheck(kernel))
    return kernel


# Separate rules, so building a PTX kernel never needs spirv-val (and SPIR-V never ptxas).
@rule(desc="Check a SPIR-V module with spirv-val", level=LogLevel.DEBUG)
async def check_spirv(check: SpirvCheck, spirv_val: SpirvVal) -> KernelChecked:
    kernel = check.kernel
    inputs = await Get(Digest, MergeDigests([kernel.digest, spirv_val.digest]))
    await Get(ProcessResult, Process(
        (spirv_val.exe, "--target-env", check.target_env, kernel.path),
        input_digest=inputs, env=TOOL_ENV,
        description=f"Run spirv-val --target-env {check.target_env} {kernel.path}"))
    return KernelChecked("spirv-val")


@rule(desc="Check a PTX module with ptxas", level=LogLevel.DEBUG)
async def check_ptx(check: PtxCheck, ptxas: PtxasTool) -> KernelChecked:
    kernel = check.kernel
    arch = kernel.ptxas_arch
    if arch is None:
        return KernelChecked(None)
    await Get(ProcessResult, VenvPexProcess(
        ptxas.pex, argv=("ptxas", f"--gpu-name={arch}", kernel.path, "-o", "check.cubin"),
        input_digest=kernel.digest, extra_env=TOOL_ENV,
        description=f"Run ptxas --gpu-name={arch} {kernel.path}"))
    return KernelChecked("ptxas")


def rules():
    return collect_rules()
