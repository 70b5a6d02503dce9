"""The fake CUDA driver (fake/fake_cuda.c) called directly through ctypes, as a host program
linked with -lcuda would call it; checks what it logs and that memory round-trips."""
from __future__ import annotations

import ctypes
from ctypes import byref, c_int32, c_int64, c_uint64, c_void_p

import pytest

PTX = b"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry vadd(.param .u64 a, .param .u64 .ptr.global.align 16 b, .param .u64 c,
                     .param .u32 n) { ret; }
.visible .entry scale(.param .f64 s, .param .align 8 .b8 blob[24], .param .u16 h) { ret; }
"""


@pytest.fixture
def cuda(fake_cuda_lib, fake_log):
    lib = ctypes.CDLL(str(fake_cuda_lib))
    lib.cuMemcpyHtoD_v2.argtypes = [c_uint64, c_void_p, ctypes.c_size_t]
    lib.cuMemcpyDtoH_v2.argtypes = [c_void_p, c_uint64, ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [c_uint64]
    lib.cuLaunchKernel.argtypes = [c_void_p] + [ctypes.c_uint] * 7 + [c_void_p] * 3
    return lib


def load_function(cuda, name: bytes) -> c_void_p:
    module, function = c_void_p(), c_void_p()
    assert cuda.cuModuleLoadData(byref(module), PTX) == 0
    assert cuda.cuModuleGetFunction(byref(function), module, name) == 0
    return function


def params_of(*cells) -> ctypes.Array:
    return (c_void_p * len(cells))(*[ctypes.addressof(c) for c in cells])


def device_buffer(cuda, values: list[float]) -> c_uint64:
    ptr = c_uint64()
    host = (ctypes.c_float * len(values))(*values)
    assert cuda.cuMemAlloc_v2(byref(ptr), ctypes.sizeof(host)) == 0
    assert cuda.cuMemcpyHtoD_v2(ptr, host, ctypes.sizeof(host)) == 0
    return ptr


def test_launch_logs_all_eleven_arguments_and_cell_bytes(cuda, fake_log, monkeypatch):
    monkeypatch.setenv("METTLE_FAKE_CUDA_CELLS", "8,8,8,4")
    function = load_function(cuda, b"vadd")
    cells = [c_int64(0x0102030405060708), c_int64(-1), c_uint64(0xA0), c_int32(5)]
    params = params_of(*cells)
    stream = c_void_p(0x5000)
    assert cuda.cuLaunchKernel(function, 3, 2, 1, 128, 1, 1, 512, stream, params, None) == 0
    [launch] = fake_log.calls("cuLaunchKernel")
    assert launch["f"] == hex(function.value)
    assert [launch[k] for k in ("gx", "gy", "gz", "bx", "by", "bz", "shared")] == \
        ["3", "2", "1", "128", "1", "1", "512"]
    assert launch["stream"] == "0x5000" and launch["extra"] == "0x0"
    assert launch["kernelParams"] == hex(ctypes.addressof(params))
    assert launch["kernel"] == '"vadd"'
    assert launch["cells"].split(",") == [
        "0807060504030201", "ffffffffffffffff", "a000000000000000", "05000000"]


def test_cell_sizes_come_from_the_ptx_entry_without_the_env(cuda, fake_log):
    function = load_function(cuda, b"scale")
    blob = (ctypes.c_uint8 * 24)(*range(24))
    params = params_of(ctypes.c_double(2.0), blob, ctypes.c_uint16(0xBEEF))
    assert cuda.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, None, params, None) == 0
    cells = fake_log.calls("cuLaunchKernel")[0]["cells"].split(",")
    assert cells == [bytes(ctypes.c_double(2.0)).hex(), bytes(range(24)).hex(), "efbe"]


def test_memory_round_trips_and_vadd_computes_on_host_copies(cuda, fake_log):
    n = 5
    a, b = device_buffer(cuda, [1, 2, 3, 4, 5]), device_buffer(cuda, [10, 20, 30, 40, 50])
    c = device_buffer(cuda, [0] * n)
    function = load_function(cuda, b"vadd")
    params = params_of(a, b, c, c_int32(n - 1))  # the last element must stay untouched
    assert cuda.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, None, params, None) == 0
    out = (ctypes.c_float * n)()
    assert cuda.cuMemcpyDtoH_v2(out, c, ctypes.sizeof(out)) == 0
    assert list(out) == [11, 22, 33, 44, 0]
    assert fake_log.lines()[-2].endswith("computed=vadd")


def test_copies_outside_an_allocation_fail(cuda, fake_log):
    ptr = device_buffer(cuda, [1.0, 2.0])
    host = (ctypes.c_float * 3)()
    assert cuda.cuMemcpyDtoH_v2(host, ptr, 12) == 1  # CUDA_ERROR_INVALID_VALUE
    assert cuda.cuMemFree_v2(ptr) == 0
    assert cuda.cuMemcpyDtoH_v2(host, ptr, 4) == 1
    assert fake_log.calls("cuMemcpyDtoH_v2")[-1]["invalid"] == "1"


def test_unknown_kernel_name_is_not_found(cuda, fake_log):
    module, function = c_void_p(), c_void_p()
    assert cuda.cuModuleLoadData(byref(module), PTX) == 0
    assert cuda.cuModuleGetFunction(byref(function), module, b"vad") == 500


def test_failures_are_injected_by_name(cuda, fake_log, monkeypatch):
    monkeypatch.setenv("METTLE_FAKE_CUDA_FAIL", "cuCtxSynchronize=719,cuInit=100")
    assert cuda.cuInit(0) == 100
    assert cuda.cuCtxSynchronize() == 719
    assert fake_log.lines() == ["cuInit failed=100", "cuCtxSynchronize failed=719"]


SECTION_8_EXPORTS = """cuInit cuDeviceGet cuDeviceGetAttribute cuCtxCreate_v2 cuModuleLoadData
cuModuleGetFunction cuMemAlloc_v2 cuMemAllocManaged cuMemAllocAsync cuMemFree_v2
cuMemFreeAsync cuMemHostAlloc cuMemFreeHost cuMemHostGetDevicePointer_v2 cuMemcpyHtoD_v2
cuMemcpyDtoH_v2 cuMemcpyHtoDAsync_v2 cuMemcpyDtoHAsync_v2 cuStreamCreate cuStreamDestroy_v2
cuStreamSynchronize cuStreamWaitEvent cuEventCreate cuEventDestroy_v2 cuEventRecord
cuEventSynchronize cuEventElapsedTime cuLaunchKernel cuCtxSynchronize cuStreamBeginCapture_v2
cuStreamEndCapture cuGraphInstantiateWithFlags cuGraphLaunch cuGraphExecDestroy
cuGraphDestroy""".split()


def test_exports_every_std_gpu_entry_point(cuda):
    missing = [name for name in SECTION_8_EXPORTS if not hasattr(cuda, name)]
    assert missing == []


def test_context_stream_and_event_calls_succeed_and_log(cuda, fake_log):
    ctx, stream, start, end = c_void_p(), c_void_p(), c_void_p(), c_void_p()
    ms = ctypes.c_float()
    assert cuda.cuCtxCreate_v2(byref(ctx), 8, 0) == 0
    assert cuda.cuStreamCreate(byref(stream), 1) == 0
    assert cuda.cuEventCreate(byref(start), 0) == 0 and cuda.cuEventCreate(byref(end), 0) == 0
    assert cuda.cuEventRecord(start, stream) == 0 and cuda.cuEventRecord(end, stream) == 0
    assert cuda.cuEventElapsedTime(byref(ms), start, end) == 0
    assert ms.value > 0
    assert fake_log.calls("cuCtxCreate_v2")[0]["flags"] == "8"
    assert fake_log.calls("cuStreamCreate")[0]["stream"] == hex(stream.value)
