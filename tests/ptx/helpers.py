"""Shared helpers of the PTX tests: emit for a named profile and assemble for its target."""
from __future__ import annotations

from toolchain.compiler.targets.ptx import emit_ptx, resolve_profile

# (--gpu-arch, ptxas --gpu-name): the three assembly targets every emitted module must pass.
TARGETS = (("sm_90a", "sm_90a"), ("gb10", "sm_121a"), ("portable", "sm_75"))


def emit(module, arch: str = "gb10", ptx_version: str | None = None,
         gpu_checks: bool = False) -> str:
    return emit_ptx(module, resolve_profile(arch, ptx_version), gpu_checks=gpu_checks)


def emit_and_assemble(build, ptxas, gpu_checks: bool = False) -> dict[str, str]:
    """Emit a fresh `build()` module for every TARGETS profile, assemble each; arch -> PTX."""
    out = {}
    for arch, gpu_name in TARGETS:
        text = emit(build(), arch, gpu_checks=gpu_checks)
        ptxas(text, gpu_name)
        out[arch] = text
    return out
