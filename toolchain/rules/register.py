"""Pants plugin entry point: the Mettle target types and rules (`toolchain.rules` in
pants.toml's backend_packages).

Invariants: the plugin holds no compiler logic; every rule runs the toolchain (or ptxas,
spirv-val, the variant tools) as a hermetic Process on declared inputs only.
"""
from __future__ import annotations

from toolchain.rules import (compile_kernel, docs_site, host_binary, inputs, kernel_package,
                             tools, variants)
from toolchain.rules.docs_site import MettleDocsSiteTarget
from toolchain.rules.subsystems import MettleSubsystem, SpirvValTool
from toolchain.rules.target_types import (GpuVariantSelectTarget, MettleHostBinaryTarget,
                                          MettleKernelTarget)


def target_types():
    return [MettleKernelTarget, MettleHostBinaryTarget, GpuVariantSelectTarget,
            MettleDocsSiteTarget]


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
        *docs_site.rules(),
    ]
