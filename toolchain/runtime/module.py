"""Compiled modules and their kernels: `mod.vadd[grid, block](a, b, c, n, shared=, stream=)`.

A Module holds the artifact (PTX text or SPIR-V) and its Signature; it loads onto a device
only when a kernel is first launched or inspected, so compiling needs no GPU. `mod.NAME` and
`mod["NAME"]` are Kernels. `kernel[grid, block]` is a launcher bound to that geometry (kept
per geometry, so a loop that launches with the same one reuses it); grid counts blocks and
both take an int or up to three ints, as in CUDA (OpenCL runs grid*block work-items).
`kernel.launch(*args, grid=, block=, shared=0, stream=None)` is the keyword form.
`shared=` is the launch's dynamic workgroup memory in bytes; a kernel whose tiles live there
(its signature's shared_bytes) always gets at least what it needs.
"""
from __future__ import annotations

from ..providers.cuda.launch import dim3
from .errors import LaunchError
from .signature import KernelSignature, Signature

_MAX_GEOMETRIES = 64   # bound launchers kept per kernel


class Module:
    """A compiled or loaded Mettle module (PTX for CUDA, SPIR-V for OpenCL)."""

    def __init__(self, target: str, artifact: bytes, signature: Signature, *,
                 origin: str = "<module>", device: int = 0, cache_hit: bool | None = None):
        if target not in ("ptx", "spirv"):
            raise ValueError(f"target must be 'ptx' or 'spirv', got {target!r}")
        self.target, self.artifact, self.signature = target, artifact, signature
        self.origin, self.device_ordinal, self.cache_hit = origin, device, cache_hit
        self._backend = None
        self._kernels: dict[str, Kernel] = {}

    @property
    def ptx(self) -> str:
        if self.target != "ptx":
            raise ValueError(f"{self.origin} is a SPIR-V module; use .spirv")
        return self.artifact.decode()

    @property
    def spirv(self) -> bytes:
        if self.target != "spirv":
            raise ValueError(f"{self.origin} is a PTX module; use .ptx")
        return self.artifact

    @property
    def kernels(self) -> list[str]:
        return list(self.signature.kernels)

    def backend(self):
        """The loaded form: CUDA (toolchain/runtime/cuda.py) or OpenCL (opencl.py)."""
        if self._backend is None:
            if self.target == "ptx":
                from .cuda import LoadedModule
                self._backend = LoadedModule(self.artifact, self.device_ordinal)
            else:
                from .opencl import LoadedModule as ClModule
                self._backend = ClModule(self.artifact)
        return self._backend

    def __getitem__(self, name: str) -> "Kernel":
        kernel = self._kernels.get(name)
        if kernel is None:
            sig = self.signature.kernels.get(name)
            if sig is None:
                raise KeyError(f"{self.origin} has no kernel {name!r} (kernels: "
                               f"{', '.join(self.kernels) or 'none'})")
            kernel = self._kernels[name] = Kernel(self, sig)
        return kernel

    def __getattr__(self, name: str) -> "Kernel":
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(exc.args[0]) from None

    def __dir__(self):
        return list(super().__dir__()) + self.kernels

    def __repr__(self) -> str:
        return f"<mettle.Module {self.origin} ({self.target}): {', '.join(self.kernels)}>"


class Kernel:
    """One kernel of a Module: launch it with `kernel[grid, block](*args)`."""

    def __init__(self, module: Module, sig: KernelSignature):
        self.module, self.signature, self.name = module, sig, sig.name
        self._plan = None
        self._launchers: dict = {}

    @property
    def params(self):
        return self.signature.params

    def plan(self):
        """The launch plan (loads the module onto its device on first use). A driver that
        refuses the module (or no device) is a LaunchError naming this kernel."""
        if self._plan is None:
            try:
                self._plan = self.module.backend().plan(self.signature)
            except LaunchError:
                raise
            except RuntimeError as exc:
                raise LaunchError(self.name, f"cannot load {self.module.origin}: {exc}"
                                  if not str(exc).startswith("no ") else str(exc),
                                  exc) from None
        return self._plan

    def __getitem__(self, geometry) -> "Launcher":
        launcher = self._launchers.get(geometry)
        if launcher is None:
            if not isinstance(geometry, tuple) or len(geometry) != 2:
                raise TypeError(f"kernel {self.name}: launch as kernel[grid, block](...), "
                                f"got kernel[{geometry!r}]")
            grid = dim3(geometry[0], f"kernel {self.name}: grid")
            block = dim3(geometry[1], f"kernel {self.name}: block")
            fixed = self.signature.block
            if fixed and block != tuple(fixed):
                raise ValueError(f"kernel {self.name} is declared with block = {fixed}; "
                                 f"launched with block {block}")
            if len(self._launchers) >= _MAX_GEOMETRIES:
                self._launchers.clear()
            launcher = self._launchers[geometry] = Launcher(self, grid + block)
        return launcher

    def launch(self, *args, grid, block, shared: int = 0, stream=None) -> None:
        self[grid, block](*args, shared=shared, stream=stream)

    # ---- facts of the loaded kernel (CUDA) ----
    def _function(self):
        return self.plan().function

    @property
    def registers(self) -> int:
        """Registers per thread (cuFuncGetAttribute)."""
        return self._function().num_regs

    @property
    def local_bytes(self) -> int:
        """Local memory per thread: the stack and any register spills."""
        from .cuda import CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
        return self._function().attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)

    @property
    def static_shared_bytes(self) -> int:
        from .cuda import CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
        return self._function().attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)

    @property
    def max_threads_per_block(self) -> int:
        from .cuda import CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        return self._function().attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def spills(self) -> dict | None:
        """{stack, spill_stores, spill_loads} in bytes, from the JIT's verbose log (a module
        the driver's JIT cache answered is compiled once more for it; None only when the
        driver's log does not report this kernel)."""
        self._function()
        return self.module.backend().spills(self.signature.symbol)

    def occupancy(self, block, shared: int = 0) -> int:
        """Resident blocks per SM at this block size and dynamic shared memory (at least
        what the kernel's tiles need)."""
        shared = max(shared, self.signature.shared_bytes)
        from ctypes import byref, c_int
        from ..providers.cuda import driver
        threads = 1
        for d in dim3(block, "block"):
            threads *= d
        blocks = c_int()
        driver.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks),
                    self._function().handle, threads, shared)
        return blocks.value

    def __repr__(self) -> str:
        return f"<mettle.Kernel {self.signature}>"


class Launcher:
    """A kernel bound to a geometry; calling it launches (asynchronously on CUDA)."""

    __slots__ = ("kernel", "dims", "_launch", "_need")

    def __init__(self, kernel: Kernel, dims: tuple):
        self.kernel, self.dims = kernel, dims
        self._launch = None
        self._need = kernel.signature.shared_bytes     # its tiles' dynamic memory

    def __call__(self, *args, shared: int = 0, stream=None) -> None:
        launch = self._launch
        if launch is None:
            launch = self._launch = self.kernel.plan().launch
        if shared < self._need:
            shared = self._need
        launch(self.dims, args, shared, stream)
