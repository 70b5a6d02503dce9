"""The PTX backend: IR module -> PTX text for one `PtxProfile` (DESIGN.md layer 4).

Public API:
    emit_ptx(module, profile, *, gpu_checks=False) -> str
    resolve_profile(arch, ptx_version) -> PtxProfile     (profiles.py)
    detect_local_arch() -> str | None                    (profiles.py)
Capability checks (PTX ISA / sm_NN) live in this package only; they raise CompileError
with E05xx codes (E0501-E0504 in profiles.py, E0505 for IR constructs PTX cannot express).
"""
from .emitter import emit_ptx
from .profiles import PtxProfile, detect_local_arch, resolve_profile

__all__ = ["emit_ptx", "resolve_profile", "detect_local_arch", "PtxProfile"]
