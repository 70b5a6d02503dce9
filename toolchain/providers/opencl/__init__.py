"""A small ctypes OpenCL host that runs SPIR-V kernels (clCreateProgramWithIL).

`host.py` binds libOpenCL (the ICD loader) and wraps platform/device/context/queue,
programs, kernels and buffers; `run_spirv.py` is the command line over it. Standard library
only, so it runs under any Python 3.9+ (the trixie root's python3 included).
"""
