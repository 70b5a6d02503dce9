"""Pants plugin entry point: the Mettle target types and rules (`toolchain.rules` in
pants.toml's backend_packages).

Invariants: the plugin holds no compiler logic; every rule runs the toolchain (or ptxas,
spirv-val, the variant tools) as a hermetic Process on declared inputs only.
"""
from __future__ import annotations

from toolchain.rules import (check, compile_kernel, dependency_inference, docs_site, fmt,
                             host_binary, inputs, kernel_package, tailor, tools, variants)
from toolchain.rules.docs_site import MettleDocsSiteTarget
from toolchain.rules.subsystems import MettleSubsystem, SpirvValTool
from toolchain.rules.target_types import (GpuVariantSelectTarget, MettleHostBinaryTarget,
                                          MettleKernelTarget, MettleSourcesGeneratorTarget,
                                          MettleSourceTarget)


def target_types():
    return [MettleSourcesGeneratorTarget, MettleSourceTarget, MettleKernelTarget,
            MettleHostBinaryTarget, GpuVariantSelectTarget, MettleDocsSiteTarget]


def rules():
    return [
        *MettleSubsystem.rules(),
        *SpirvValTool.rules(),
        *tools.rules(),
        *inputs.rules(),
        *compile_kernel.rules(),
        *kernel_package.rules(),
        *host_binary.rules(),
        *variants.rules(),
        *dependency_inference.rules(),
        *tailor.rules(),
        *check.rules(),
        *fmt.rules(),
        *docs_site.rules(),
    ]
