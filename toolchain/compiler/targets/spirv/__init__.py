"""SPIR-V (OpenCL 2.0) target: module writer, encoder, disassembler and the IR emitter.

Public API: `emit_spirv(module, gpu_checks=False) -> bytes` (emit.py); the writer
(`module.Module`), `disasm.disassemble` and the grammar tables stay importable from their
own modules.
"""
from .emit import emit_spirv

__all__ = ["emit_spirv"]
