"""`mettle_kernel` as a build product: field set -> compile request, the address -> module
lookup that host binaries use, and `./pants package` for kernels.

Invariants: a module's file name is `<target name>.ptx|.spv` (so `kernels=[":kernels"]` puts
`kernels.ptx` beside the host); packaged files land in `dist/<BUILD dir>/`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pants.core.goals.package import BuiltPackage, BuiltPackageArtifact, PackageFieldSet
from pants.core.util_rules.environments import EnvironmentField
from pants.engine.addresses import Address
from pants.engine.fs import AddPrefix, Digest
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import (InvalidFieldException, Target, WrappedTarget,
                                 WrappedTargetRequest)
from pants.engine.unions import UnionRule

from toolchain.rules.compile_kernel import CompiledKernel, CompileKernelRequest
from toolchain.rules.target_types import (GpuVariantSelectTarget, MettleConstsField,
                                          MettleFormatField, MettleFpContractField,
                                          MettleGpuArchField,
                                          MettleKernelTarget, MettleOptimizeField,
                                          MettlePtxVersionField, MettleSourceField,
                                          MettleSpirvTargetEnvField,
                                          MettleTensorTupleBudgetField, MettleValidateField)

EXTENSIONS = {"ptx": "ptx", "spirv": "spv"}


def compile_request(tgt: Target, output_stem: str,
                    overrides: Mapping[str, str] = {}) -> CompileKernelRequest:
    """The compile request of a mettle_kernel target, with variant overrides applied."""
    fmt = tgt[MettleFormatField].value
    budget = overrides.get("tensor_tuple_budget")
    optimize = overrides.get("optimize")
    return CompileKernelRequest(
        address=tgt.address,
        source=tgt[MettleSourceField],
        output_name=f"{output_stem}.{EXTENSIONS[fmt]}",
        fmt=fmt,
        gpu_arch=overrides.get("gpu_arch", tgt[MettleGpuArchField].value),
        optimize=(tgt[MettleOptimizeField].value if optimize is None
                  else optimize.lower() == "true"),
        ptx_version=overrides.get("ptx_version", tgt[MettlePtxVersionField].value),
        tensor_tuple_budget=(tgt[MettleTensorTupleBudgetField].value if budget is None
                             else int(budget)),
        validate=tgt[MettleValidateField].value,
        fp_contract=tgt[MettleFpContractField].value,
        spirv_target_env=tgt[MettleSpirvTargetEnvField].value,
        consts=tuple(tgt[MettleConstsField].value or ()),
    )


@dataclass(frozen=True)
class KernelModuleRequest:
    """The module of a `mettle_kernel` or `gpu_variant_select` target, by address."""

    address: Address
    description_of_origin: str


@dataclass(frozen=True)
class SelectedVariantRequest:
    address: Address


@dataclass(frozen=True)
class SelectedVariant:
    kernel: CompiledKernel    # the winner, renamed to `<select target name>.ptx`
    selection: Digest         # `<name>.selection.json`, the selector's report
    selection_path: str


@rule(desc="Build a kernel module")
async def kernel_module(request: KernelModuleRequest) -> CompiledKernel:
    wrapped = await Get(WrappedTarget, WrappedTargetRequest(
        request.address, description_of_origin=request.description_of_origin))
    tgt = wrapped.target
    if isinstance(tgt, GpuVariantSelectTarget):
        selected = await Get(SelectedVariant, SelectedVariantRequest(tgt.address))
        return selected.kernel
    if not isinstance(tgt, MettleKernelTarget):
        raise InvalidFieldException(
            f"{request.description_of_origin} names {tgt.address}, a `{tgt.alias}`; expected "
            f"a `{MettleKernelTarget.alias}` or `{GpuVariantSelectTarget.alias}` target.")
    return await Get(CompiledKernel, CompileKernelRequest,
                     compile_request(tgt, tgt.address.target_name))


@dataclass(frozen=True)
class MettleKernelFieldSet(PackageFieldSet):
    required_fields = (MettleSourceField, MettleFormatField)

    source: MettleSourceField
    fmt: MettleFormatField
    # Where its actions run (tools/remote/BUILD): remote workers or this machine.
    environment: EnvironmentField


@rule(desc="Package a Mettle kernel")
async def package_kernel(field_set: MettleKernelFieldSet) -> BuiltPackage:
    kernel = await Get(CompiledKernel, KernelModuleRequest(
        field_set.address, description_of_origin="<infallible>"))
    spec_path = field_set.address.spec_path
    digest = await Get(Digest, AddPrefix(kernel.digest, spec_path)) if spec_path \
        else kernel.digest
    relpath = f"{spec_path}/{kernel.path}" if spec_path else kernel.path
    return BuiltPackage(digest, (BuiltPackageArtifact(relpath),))


def rules():
    return [*collect_rules(), UnionRule(PackageFieldSet, MettleKernelFieldSet)]

