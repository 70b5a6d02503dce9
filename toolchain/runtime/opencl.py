"""The OpenCL side of the runtime: SPIR-V modules launched on NumPy arrays through the
OpenCL provider (toolchain/providers/opencl), with the call syntax and checks of CUDA.

`mod.k[grid, block](a, b, n)`: grid counts work-groups and block work-items per group, as
in CUDA (the NDRange is grid*block work-items). Each pointer argument is a C-contiguous
NumPy array of the parameter's element type: it is copied into a fresh buffer, and after
the kernel (launches are synchronous: clFinish) copied back into the array when the array
is writable. Scalars are converted and range-checked as for CUDA. `stream=` and dynamic
`shared=` have no OpenCL meaning here and are refused.
"""
from __future__ import annotations

import ctypes

from .convert import Bad, argument_error, count_error, scalar_converter
from .errors import LaunchError
from .signature import SCALARS, KernelSignature, Param


class LoadedModule:
    """A SPIR-V program built on the first OpenCL device that takes SPIR-V."""

    def __init__(self, spirv: bytes):
        from ..providers.opencl.session import Session
        self.session = Session()
        self.program = self.session.build(spirv)

    def plan(self, sig: KernelSignature) -> "LaunchPlan":
        return LaunchPlan(self, sig)


def _array_converter(param: Param):
    accepted = param.dtypes

    def convert(value):
        cls = type(value)
        if cls.__module__ != "numpy" or cls.__name__ != "ndarray":
            raise Bad(TypeError, f"expected a NumPy array, got {cls.__module__}."
                      f"{cls.__qualname__}")
        from .arrays import dtype_name
        dtype = dtype_name(value.dtype)
        if accepted is not None and dtype not in accepted:
            raise Bad(TypeError, f"expected an array of {param.dtype}, got {dtype}")
        if not value.flags.c_contiguous:
            raise Bad(ValueError, "the array is not C-contiguous: pass "
                      "numpy.ascontiguousarray(...)")
        return value
    return convert


class LaunchPlan:
    def __init__(self, module: LoadedModule, sig: KernelSignature):
        from ..providers.opencl.host import OpenCLError
        self.module, self.sig, self.name = module, sig, sig.name
        self.session = module.session
        try:
            self.kernel = self.session.kernel(module.program, sig.symbol)
        except OpenCLError as exc:
            raise LaunchError(sig.name, f"the program has no kernel {sig.symbol}: {exc}",
                              exc) from None
        self.converters = []
        for p in sig.params:
            if p.kind == "pointer":
                self.converters.append((_array_converter(p), None))
            elif p.kind == "scalar":
                self.converters.append((scalar_converter(p), SCALARS[p.type][0]))
            else:
                raise LaunchError(sig.name, f"parameter `{p.name}` has type {p.type}, which "
                                  "this runtime cannot pass")

    def launch(self, dims: tuple, args: tuple, shared: int, stream) -> None:
        from ..providers.opencl.host import OpenCLError
        if len(args) != len(self.converters):
            raise count_error(self.sig, len(args))
        if stream is not None:
            raise ValueError(f"kernel {self.name}: OpenCL launches take no stream "
                             "(they are synchronous)")
        if shared:
            raise ValueError(f"kernel {self.name}: dynamic shared memory is not supported "
                             "on OpenCL")
        values = []
        for index, ((convert, cell), value) in enumerate(zip(self.converters, args)):
            try:
                converted = convert(value)
            except Bad as bad:
                raise argument_error(self.sig, index, bad) from None
            values.append(converted if cell is None else cell(converted))
        session, buffers = self.session, []
        try:
            cl_args = []
            for value in values:
                if isinstance(value, ctypes._SimpleCData):
                    cl_args.append(value)
                    continue
                buf = session.buffer(value.tobytes())
                buffers.append((buf, value))
                cl_args.append(buf)
            session.set_args(self.kernel, cl_args)
            session.launch(self.kernel, [g * b for g, b in zip(dims[:3], dims[3:])],
                           list(dims[3:]))
            for buf, array in buffers:
                if array.flags.writeable:
                    array.reshape(-1).view("u1")[:] = memoryview(session.read(buf))
        except OpenCLError as exc:
            raise LaunchError(self.name, str(exc), exc) from None
        finally:
            for buf, _ in buffers:
                session.release(buf)
