"""Mettle frontend: lexing, parsing, module loading (then checking and IR lowering).

`parse_source(text, path) -> ast.Module` is the single entry for one source text; it raises
CompileError (never another exception) and is the seam the fuzz tests drive.
"""
from .parser import parse_source

__all__ = ["parse_source"]

# Checking + lowering seam (frontend part 2): Mettle source -> (ir.Module, warnings).
from .api import compile_to_ir  # noqa: E402

__all__ += ["compile_to_ir"]
