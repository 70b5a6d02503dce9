"""The PTX backend: IR module -> PTX text for one `PtxProfile` (DESIGN.md layer 4).

Public API:
    emit_ptx(module, profile, *, gpu_checks=False, fp_contract=True) -> str
    lower_ptx(module, profile, ...) -> PtxModule   (instruction objects: instr.py)
    resolve_profile(arch, ptx_version) -> PtxProfile     (profiles.py)
    detect_local_arch() -> str | None                    (profiles.py)
Capability checks (PTX ISA / sm_NN) live in this package only; they raise CompileError
with E05xx codes (E0501-E0504 in profiles.py, E0505 for IR constructs PTX cannot express).
The emitter is imported on first use, so resolving a profile (the target registry, the
build rules) loads no code generator.
"""
from .profiles import PtxProfile, detect_local_arch, resolve_profile

_LAZY = {"emit_ptx": ".emitter", "lower_ptx": ".emitter", "PtxInstr": ".instr",
         "PtxModule": ".instr"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(name)


__all__ = ["emit_ptx", "lower_ptx", "resolve_profile", "detect_local_arch", "PtxProfile",
           "PtxInstr", "PtxModule"]
