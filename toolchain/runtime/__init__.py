"""The Python runtime: `import mettle` (toolchain/__init__.py re-exports it lazily).

compiler.py  compile (in process, cached: cache.py) and load (packaged artifacts)
module.py    Module / Kernel / Launcher: `mod.vadd[grid, block](a, b, c, n)`
signature.py the kernels' typed parameters (the compiler's --emit-signature document)
arrays.py    array arguments: DLPack, __cuda_array_interface__, torch, CuPy
cuda.py      devices, DeviceArray, Stream, Event and each kernel's launch plan
opencl.py    SPIR-V modules on OpenCL, NumPy arrays in and out
bench.py     timing with CUDA events, optional L2 flush
"""
