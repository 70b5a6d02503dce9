"""One OpenCL context + queue on a SPIR-V device: build IL, make buffers, launch, read back.

Invariants: `build` raises `OpenCLError` with the program build log when clBuildProgram
fails; `launch` blocks until the kernel has finished (clFinish), so reads see its writes.
Kernel argument forms for `set_args`: `Buffer` (a cl_mem made by `buffer`), ("local", n)
for an n-byte local-memory argument (size n, NULL value), or a ctypes scalar instance.
"""
from __future__ import annotations

import ctypes
from ctypes import byref, c_size_t, c_void_p

from .host import (CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE, CL_PROGRAM_BUILD_LOG, OpenCL,
                   OpenCLError, pick_device)


class Buffer:
    """A device buffer of `nbytes` bytes."""

    def __init__(self, handle: int, nbytes: int):
        self.handle, self.nbytes = c_void_p(handle), nbytes


class Session:
    def __init__(self, cl: OpenCL | None = None):
        self.cl = cl or OpenCL()
        self.info = pick_device(self.cl)
        platform, device = self.info["handles"]
        self.device = c_void_p(device)
        self.context = c_void_p(self.cl.make("clCreateContext", None, 1, byref(self.device),
                                             None, None))
        self.queue = c_void_p(self.cl.make("clCreateCommandQueue", self.context, self.device, 0))
        self._owned: list[tuple[str, c_void_p]] = []

    def build(self, il: bytes, options: str = "") -> c_void_p:
        """clCreateProgramWithIL + clBuildProgram; the build log is in the error."""
        blob = ctypes.create_string_buffer(il, len(il))
        program = c_void_p(self.cl.make("clCreateProgramWithIL", self.context, blob, len(il)))
        self._owned.append(("clReleaseProgram", program))
        status = self.cl.lib.clBuildProgram(program, 1, byref(self.device),
                                            options.encode(), None, None)
        if status != 0:
            raise OpenCLError("clBuildProgram", status, self.build_log(program))
        return program

    def build_log(self, program: c_void_p) -> str:
        size = c_size_t(0)
        fn = self.cl.lib.clGetProgramBuildInfo
        fn(program, self.device, CL_PROGRAM_BUILD_LOG, 0, None, byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        fn(program, self.device, CL_PROGRAM_BUILD_LOG, size, buf, None)
        return buf.value.decode("utf-8", "replace")

    def kernel(self, program: c_void_p, name: str) -> c_void_p:
        kern = c_void_p(self.cl.make("clCreateKernel", program, name.encode()))
        self._owned.append(("clReleaseKernel", kern))
        return kern

    def buffer(self, data: bytes | None = None, nbytes: int = 0) -> Buffer:
        """A read-write buffer, initialised from `data` when given (else `nbytes` zeros)."""
        data = data if data is not None else bytes(nbytes)
        host = ctypes.create_string_buffer(data, max(len(data), 1))
        flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR
        handle = self.cl.make("clCreateBuffer", self.context, flags, max(len(data), 1), host)
        buf = Buffer(handle, len(data))
        self._owned.append(("clReleaseMemObject", buf.handle))
        return buf

    def release(self, buf: Buffer) -> None:
        """Release one buffer now (the runtime makes buffers per launch)."""
        for i, (fn, handle) in enumerate(self._owned):
            if handle is buf.handle:
                del self._owned[i]
                self.cl.lib.clReleaseMemObject(handle)
                return

    def set_args(self, kern: c_void_p, args: list) -> None:
        for index, arg in enumerate(args):
            if isinstance(arg, Buffer):
                size, ptr = ctypes.sizeof(c_void_p), byref(arg.handle)
            elif isinstance(arg, tuple) and arg[0] == "local":
                size, ptr = arg[1], None
            else:
                size, ptr = ctypes.sizeof(arg), byref(arg)
            status = self.cl.lib.clSetKernelArg(kern, index, size, ptr)
            if status != 0:
                raise OpenCLError(f"clSetKernelArg(index {index})", status)

    def launch(self, kern: c_void_p, global_size: list[int],
               local_size: list[int] | None) -> None:
        dims = len(global_size)
        gsz = (c_size_t * dims)(*global_size)
        lsz = (c_size_t * dims)(*local_size) if local_size else None
        status = self.cl.lib.clEnqueueNDRangeKernel(self.queue, kern, dims, None, gsz, lsz,
                                                    0, None, None)
        if status != 0:
            raise OpenCLError("clEnqueueNDRangeKernel", status)
        if self.cl.lib.clFinish(self.queue) != 0:
            raise OpenCLError("clFinish", -1)

    def read(self, buf: Buffer) -> bytes:
        out = ctypes.create_string_buffer(max(buf.nbytes, 1))
        status = self.cl.lib.clEnqueueReadBuffer(self.queue, buf.handle, 1, 0, buf.nbytes,
                                                 out, 0, None, None)
        if status != 0:
            raise OpenCLError("clEnqueueReadBuffer", status)
        return out.raw[:buf.nbytes]

    def close(self) -> None:
        for fn, handle in reversed(self._owned):
            getattr(self.cl.lib, fn)(handle)
        self._owned.clear()
        self.cl.lib.clReleaseCommandQueue(self.queue)
        self.cl.lib.clReleaseContext(self.context)
