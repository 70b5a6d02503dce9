"""What the OpenCL 2.0 SPIR-V profile can and cannot express, as located diagnostics.

Capability diagnostics (E0510-E0519) are raised at the offending op's source span; nothing
this profile cannot represent is ever narrowed silently:
  E0510  a type or construct with no OpenCL SPIR-V form (function pointers, tensor ops
         (tensor_reject.py), globals of an unsupported space, dynamic workgroup views in
         helpers, ops outside the IR table, ...)
  E0511  subgroup.shuffle whose source lane is not a compile-time constant
  E0512  debug.print (gpu_print is PTX only)
  E0513  debug.assert (gpu_assert; SPIR-V rejects it, LANGUAGE.md §11)
  E0514  an operand width/type an emitter does not support (e.g. 64-bit vec.load4)
  E0900  internal error: a SpirvBuildError (or any other bug) inside the emitter

Capabilities themselves are declared by the module writer from what the instructions use
(module.py); the emitters only add what the grammar cannot see: Int64Atomics for 64-bit
atomics, which `spirv-val --target-env opencl2.0` rejects (it validates under spv1.0).
"""
from __future__ import annotations

from ...diagnostics import CompileError, Diagnostic, error

PROFILE = "the OpenCL 2.0 SPIR-V profile"


def unsupported(ins, what: str, help: str | None = None) -> CompileError:
    """E0510: `what` has no representation in this profile."""
    return error("E0510", f"{what} cannot be represented in {PROFILE}", ins.span, help)


def varying_shuffle(ins) -> CompileError:
    return error("E0511", "the OpenCL 2.0 profile cannot represent a varying-source shuffle",
                 ins.span, help="use subgroup_broadcast with a uniform lane, or a "
                 "compile-time constant source lane")


def debug_print(ins) -> CompileError:
    return error("E0512", "gpu_print (debug.print) is PTX only; SPIR-V has no printf "
                 f"in {PROFILE}", ins.span, help="compile with --emit-ptx to print")


def debug_assert(ins) -> CompileError:
    return error("E0513", "SPIR-V rejects gpu_assert (debug.assert): "
                 f"{PROFILE} has no trap", ins.span,
                 help="remove the assertion or compile with --emit-ptx --gpu-checks")


def bad_operand(ins, what: str) -> CompileError:
    return error("E0514", f"{ins.op}: {what} in {PROFILE}", ins.span)


def internal(exc: BaseException, where: str = "") -> CompileError:
    """E0900: an emitter bug surfaced as an exception; never a user-facing traceback."""
    place = f" while emitting {where}" if where else ""
    return CompileError(Diagnostic(
        "E0900", f"internal compiler error in the SPIR-V backend{place}: "
        f"{type(exc).__name__}: {exc}",
        help="please report this with the input that triggered it"))


def is_tensor_op(op: str) -> bool:
    """Cooperative tensor operations: no cooperative-matrix capability in this profile."""
    return op.startswith("tensor.") or op.startswith("tensor_")
