"""AArch64 Linux host target: `emit_object(module, release=False) -> bytes` (an ELF .o)."""
from .target import emit_object

__all__ = ["emit_object"]
