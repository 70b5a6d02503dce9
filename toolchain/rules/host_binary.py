"""`mettle_host_binary`: compile and link a host program, then package it with its kernels.

Invariants: the host compile action does not depend on any kernel (editing a kernel never
re-links the host); packaging only places the kernel modules beside the executable, in
`dist/<BUILD dir>/`, so that directory runs as is (the host finds its modules next to
/proc/self/exe). Two kernels with one file name are an error, not a silent overwrite.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from pants.backend.python.util_rules.pex import VenvPexProcess
from pants.core.goals.package import BuiltPackage, BuiltPackageArtifact, PackageFieldSet
from pants.core.goals.run import RunFieldSet, RunInSandboxBehavior, RunRequest
from pants.core.util_rules.environments import EnvironmentField
from pants.engine.addresses import Address, Addresses, UnparsedAddressInputs
from pants.engine.fs import AddPrefix, Digest, MergeDigests
from pants.engine.process import FallibleProcessResult
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.target import InvalidFieldException
from pants.engine.unions import UnionRule
from pants.util.logging import LogLevel

from toolchain.rules.compile_kernel import CompiledKernel
from toolchain.rules.kernel_package import KernelModuleRequest
from toolchain.rules.target_types import (MettleHostTargetField, MettleKernelsField,
                                          MettleLinkArgsField, MettleOptimizeField,
                                          MettleSourceField)
from toolchain.rules.inputs import MettleInputs, MettleInputsRequest
from toolchain.rules.tools import TOOL_ENV, MettleCompiler, compile_succeeded


@dataclass(frozen=True)
class CompileHostRequest:
    address: Address
    source: MettleSourceField
    output_name: str
    optimize: bool
    link_args: Tuple[str, ...]
    target: Optional[str] = None   # --target (None: the building machine's own)


@dataclass(frozen=True)
class CompiledHost:
    digest: Digest            # holds exactly `path`, executable
    path: str


def host_argv(req: CompileHostRequest, source: str, stdlib_root: str) -> Tuple[str, ...]:
    argv = ["--build", source, "-o", req.output_name, "--stdlib", stdlib_root]
    if req.optimize:
        argv.append("-O")
    if req.target:
        argv.append(f"--target={req.target}")
    for arg in req.link_args:
        argv.append(f"--link-arg={arg}")  # one token: link args may start with '-'
    return tuple(argv)


@rule(desc="Compile and link a Mettle host program", level=LogLevel.DEBUG)
async def compile_host(req: CompileHostRequest, compiler: MettleCompiler) -> CompiledHost:
    inputs = await Get(MettleInputs, MettleInputsRequest(req.address, req.source))
    result = await Get(FallibleProcessResult, VenvPexProcess(
        compiler.pex, argv=host_argv(req, inputs.entry, inputs.stdlib_root),
        input_digest=inputs.digest,
        output_files=(req.output_name,), extra_env=TOOL_ENV,
        description=f"Run mettle build {inputs.entry} -> {req.output_name}", level=LogLevel.INFO))
    compile_succeeded(result, f"{req.address}: building {inputs.entry}")
    return CompiledHost(result.output_digest, req.output_name)


@dataclass(frozen=True)
class MettleHostBinaryFieldSet(PackageFieldSet, RunFieldSet):
    required_fields = (MettleSourceField, MettleKernelsField)
    # `./pants run` runs the packaged directory (executable + kernel modules) in a sandbox.
    run_in_sandbox_behavior = RunInSandboxBehavior.RUN_REQUEST_HERMETIC

    source: MettleSourceField
    kernels: MettleKernelsField
    link_args: MettleLinkArgsField
    optimize: MettleOptimizeField
    target: MettleHostTargetField
    # Where its actions run (tools/remote/BUILD): remote workers or this machine.
    environment: EnvironmentField


@rule(desc="Package a Mettle host binary")
async def package_host(field_set: MettleHostBinaryFieldSet) -> BuiltPackage:
    kernel_addresses = await Get(Addresses, UnparsedAddressInputs,
                                 field_set.kernels.to_unparsed_address_inputs())
    origin = f"the `kernels` field of {field_set.address}"
    kernels = await MultiGet(
        Get(CompiledKernel, KernelModuleRequest(a, origin)) for a in kernel_addresses)
    host = await Get(CompiledHost, CompileHostRequest(
        field_set.address, field_set.source, field_set.address.target_name,
        bool(field_set.optimize.value), tuple(field_set.link_args.value or ()),
        field_set.target.value))
    _check_unique([host.path, *(k.path for k in kernels)], field_set.address)
    merged = await Get(Digest, MergeDigests([host.digest, *(k.digest for k in kernels)]))
    spec_path = field_set.address.spec_path
    digest = await Get(Digest, AddPrefix(merged, spec_path)) if spec_path else merged
    prefix = f"{spec_path}/" if spec_path else ""
    artifacts = [BuiltPackageArtifact(prefix + host.path)]
    artifacts += [BuiltPackageArtifact(prefix + k.path) for k in kernels]
    return BuiltPackage(digest, tuple(artifacts))


@rule(desc="Run a Mettle host binary")
async def run_host(field_set: MettleHostBinaryFieldSet) -> RunRequest:
    """`./pants run //dir:host -- ARGS`: the packaged directory in a fresh sandbox, the
    executable run from there (it finds its kernel modules beside /proc/self/exe); the run
    goal appends ARGS and passes the exit code through."""
    package = await Get(BuiltPackage, PackageFieldSet, field_set)
    executable = package.artifacts[0].relpath
    return RunRequest(digest=package.digest, args=(f"{{chroot}}/{executable}",))


def _check_unique(names: list, address: Address) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise InvalidFieldException(
                f"{address}: two outputs are named {name!r} (the executable and each kernel "
                "module land in one directory); rename one of the targets.")
        seen.add(name)


def rules():
    return [*collect_rules(), UnionRule(PackageFieldSet, MettleHostBinaryFieldSet),
            *MettleHostBinaryFieldSet.rules()]
