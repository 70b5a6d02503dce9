"""The shared device call-graph verifier, identical for every GPU backend.

A kernel's transitively reachable ordinary functions become device helpers. Rejected
(E0401-E0407): a GPU module with no kernel, recursion, indirect calls, calls to
non-intrinsic externs, calling a kernel as a function, host launches (`dispatch`) in device
code, and host-only operations in device code. Host functions that no kernel reaches are
simply not part of the device program.
"""
from __future__ import annotations

from ...records import dataclass   # (start-up: not the dataclasses module)

from ..diagnostics import CompileError, Diagnostic, DiagnosticBag
from . import ops as O
from .async_groups import verify_async_groups
from .module import Function, Module
from .uniformity import verify_uniformity


@dataclass
class DeviceProgram:
    kernels: list[Function]
    helpers: list[Function]           # reachable ordinary functions, callees first

    @property
    def functions(self) -> list[Function]:
        return self.helpers + self.kernels


def _callees(fn: Function):
    for ins in fn.instructions():
        if ins.op == "call":
            yield ins, ins.operands[0]


def _chain(calls: list[tuple[str, object]]) -> list[str]:
    """A note naming the path from the kernel to the function with the error, when that
    function is not the kernel itself (a helper, perhaps the standard library's)."""
    if len(calls) < 2:
        return []
    steps = [f"`{calls[0][0]}`"] + [f"`{name}` (called at {span})" if span else f"`{name}`"
                                    for name, span in calls[1:]]
    return ["reached from kernel " + " -> ".join(steps)]


def _error(bag: DiagnosticBag, calls, code: str, msg: str, span, help=None) -> None:
    """An error in the function `calls` leads to, noting that path from the kernel."""
    bag.add(Diagnostic(code, msg, span, "error", help, _chain(calls)))


def _check_body(fn: Function, bag: DiagnosticBag, calls) -> None:
    for ins in fn.instructions():
        where = O.OPS[ins.op].where
        if ins.op == "gpu.launch":
            _error(bag, calls, "E0406", f"`dispatch` cannot be used in device code (in "
                   f"`{fn.name}`)", ins.span)
        elif ins.op == "call_indirect":
            _error(bag, calls, "E0403", f"indirect call in device code (in `{fn.name}`)",
                   ins.span, help="GPU code may only call functions by name")
        elif where == "host":
            _error(bag, calls, "E0407", f"host-only operation {ins.op} in device code",
                   ins.span)


def device_program(m: Module) -> DeviceProgram:
    """Run every shared device verifier (call graph, collective uniformity, async groups)
    over `m` and return its kernels plus reachable helpers. Both GPU backends start here."""
    program = _call_graph(m)
    verify_uniformity(program.functions)
    verify_async_groups(program.functions)
    return program


def _call_graph(m: Module) -> DeviceProgram:
    kernels = m.kernels()
    if not kernels:
        raise CompileError(Diagnostic(
            "E0401", f"module `{m.name}` has no kernel; GPU output needs at least one",
            help="declare an entry point with `kernel name(...) { ... }`"))
    bag = DiagnosticBag()
    order: list[Function] = []
    state: dict[str, str] = {}        # name -> "active" | "done"

    def visit(fn: Function, stack: list[str], calls: list[tuple[str, object]]) -> None:
        # calls: (function, the span of the call that reached it) from the kernel down
        state[fn.name] = "active"
        _check_body(fn, bag, calls)
        for ins, callee in _callees(fn):
            if callee.is_kernel:
                bag.error("E0405", f"kernel `{callee.name}` cannot be called as a function",
                          ins.span, help="launch kernels from the host with `dispatch`")
            elif callee.is_extern:
                _error(bag, calls, "E0404", f"device code cannot call extern function "
                       f"`{callee.name}`", ins.span,
                       help="only the GPU intrinsics may be declared extern in kernels")
            elif state.get(callee.name) == "active":
                # reported at the call that closes the cycle (the caller's declaration when
                # a frontend gave the call no location)
                cycle = " -> ".join(stack[stack.index(callee.name):] + [callee.name])
                bag.error("E0402", f"recursion is not allowed in device code ({cycle})",
                          ins.span or fn.span,
                          help="GPU code has no call stack for recursion; rewrite the "
                          "recursion as a loop")
            elif callee.name not in state:
                visit(callee, stack + [callee.name], calls + [(callee.name, ins.span)])
        state[fn.name] = "done"
        if not fn.is_kernel:
            order.append(fn)

    for k in kernels:
        if k.name not in state:
            visit(k, [k.name], [(k.name, None)])
    bag.raise_if_errors()
    return DeviceProgram(kernels, order)
