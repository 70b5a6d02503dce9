"""Target-neutral typed IR and its public builder (DESIGN.md layer 2).

Public API: `Builder`, `Module`, the types (`I32`, `F32`, `ptr(...)`, ...), `format_module`,
`verify_module`, `device_program`. Another frontend builds the very same modules as Mettle's
through `Builder` alone.
"""
from .builder import Builder, IRTypeError
from .callgraph import DeviceProgram, device_program
from .module import (Block, Const, Function, Global, Instr, KernelDecl, Local, Module, Param,
                     Undef)
from .printer import format_function, format_module
from .types import (BOOL, F32, F64, I8, I16, I32, I64, SCALARS, U8, U16, U32, U64, VOID,
                    ArrayType, BoolType, FloatType, FnPtrType, IntType, PtrType, StructType,
                    Type, VoidType, align_up, ptr)
from .verify import verify_function, verify_module

__all__ = [n for n in dir() if not n.startswith("_")]
