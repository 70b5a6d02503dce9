"""Typed launches against the fake CUDA driver: argument marshalling (the bytes of every
parameter cell reach cuLaunchKernel), every argument error, streams, shared memory, driver
errors, array protocols, events, bench and the loaded kernel's facts."""
from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

import mettle
from toolchain.runtime import cuda as runtime_cuda

VADD = """kernel vadd(a: float32*, b: float32*, c: float32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { c[i] = a[i] + b[i]; }
}
"""
MIX = """kernel mix(p: uint8*, x: int8, y: uint16, z: int64, f: float64, q: bool, u: uint64,
               g: float32) {
    if (x > 0 && q) { p[0] = (uint8)y; }
}
"""
FIXED = """kernel(block = 64) fixed(a: int32*) { a[thread.x] = 1; }
"""


@pytest.fixture
def vadd(fake_driver):
    return mettle.compile(VADD, arch="sm_90a")


@pytest.fixture
def mix(fake_driver):
    return mettle.compile(MIX, arch="sm_90a")


def cells(log) -> list[str]:
    return log.calls("cuLaunchKernel")[-1]["cells"].split(",")


def test_vadd_runs_on_device_arrays(vadd, fake_driver):
    n = 1000
    a = mettle.to_device(np.arange(n, dtype=np.float32))
    b = mettle.to_device(np.full(n, 0.5, np.float32))
    c = mettle.zeros(n, "float32")
    vadd.vadd[(n + 255) // 256, 256](a, b, c, n)
    np.testing.assert_array_equal(c.numpy(), np.arange(n, dtype=np.float32) + 0.5)
    call = fake_driver.calls("cuLaunchKernel")[-1]
    assert (call["gx"], call["bx"], call["shared"], call["computed"]) == ("4", "256", "0", "vadd")
    assert cells(fake_driver) == [struct.pack("<Q", x.ptr).hex() for x in (a, b, c)] + \
        [struct.pack("<i", n).hex()]


def test_every_scalar_type_is_marshalled_at_its_width(mix, fake_driver):
    p = mettle.zeros(4, "uint8")
    mix.mix[1, 1](p, -5, 65535, -(1 << 63), 2.5, True, (1 << 64) - 1, 1.5)
    assert cells(fake_driver) == [
        struct.pack("<Q", p.ptr).hex(), struct.pack("<b", -5).hex(),
        struct.pack("<H", 65535).hex(), struct.pack("<q", -(1 << 63)).hex(),
        struct.pack("<d", 2.5).hex(), "01", struct.pack("<Q", (1 << 64) - 1).hex(),
        struct.pack("<f", 1.5).hex()]


def test_numpy_scalars_are_accepted(mix, fake_driver):
    p = mettle.zeros(4, "uint8")
    mix.mix[1, 1](p, np.int8(3), np.uint16(7), np.int64(9), np.float32(0.25), np.bool_(False),
                  np.uint64(1), np.float64(2.0))
    assert cells(fake_driver)[1:3] == ["03", "0700"]


def test_the_keyword_form_launches_alike(vadd, fake_driver):
    a = mettle.zeros(8)
    vadd.vadd.launch(a, a, a, 8, grid=(2, 3), block=(4, 1, 2), shared=16)
    call = fake_driver.calls("cuLaunchKernel")[-1]
    assert [call[k] for k in ("gx", "gy", "gz", "bx", "by", "bz", "shared")] == \
        ["2", "3", "1", "4", "1", "2", "16"]


ERRORS = [
    # (arguments after p, error type, message)
    ((1, 2, 3, 4.0, True, 5), TypeError, "kernel mix takes 8 arguments (p, x, y, z, f, q, u, g), "
     "got 7"),
    ((128, 2, 3, 4.0, True, 5, 1.0), ValueError,
     "kernel mix: parameter 1 `x` (int8): 128 is out of range for int8 (-128..127)"),
    ((1, -1, 3, 4.0, True, 5, 1.0), ValueError,
     "kernel mix: parameter 2 `y` (uint16): -1 is out of range for uint16 (0..65535)"),
    ((1, 2, 3, 4.0, True, 1 << 64, 1.0), ValueError,
     f"kernel mix: parameter 6 `u` (uint64): {1 << 64} is out of range for uint64 "
     f"(0..{(1 << 64) - 1})"),
    ((1.5, 2, 3, 4.0, True, 5, 1.0), TypeError,
     "kernel mix: parameter 1 `x` (int8): expected an integer, got float"),
    ((True, 2, 3, 4.0, True, 5, 1.0), TypeError,
     "kernel mix: parameter 1 `x` (int8): expected an integer, got bool"),
    ((1, 2, 3, "4", True, 5, 1.0), TypeError,
     "kernel mix: parameter 4 `f` (float64): expected a number, got str"),
    ((1, 2, 3, 4.0, 1, 5, 1.0), TypeError,
     "kernel mix: parameter 5 `q` (bool): expected a bool, got int"),
    ((1, 2, 3, 4.0, True, 5, 1e39), ValueError,
     "kernel mix: parameter 7 `g` (float32): 1e+39 is out of range for float32"),
]


@pytest.mark.parametrize("args, error, message", ERRORS)
def test_scalar_errors_name_the_kernel_and_the_parameter(mix, args, error, message):
    p = mettle.zeros(4, "uint8")
    with pytest.raises(error) as info:
        mix.mix[1, 1](p, *args)
    assert str(info.value) == message


def test_an_infinite_float32_is_not_a_range_error(mix, fake_driver):
    mix.mix[1, 1](mettle.zeros(1, "uint8"), 1, 2, 3, 4.0, True, 5, float("inf"))
    assert cells(fake_driver)[7] == struct.pack("<f", float("inf")).hex()


class CudaArray:
    """A foreign device array speaking __cuda_array_interface__ (as Numba and JAX do)."""

    def __init__(self, base, typestr="<f4", shape=(4,), strides=None, device=None):
        self.base = base
        self.__cuda_array_interface__ = {"data": (base.ptr, False), "typestr": typestr,
                                         "shape": shape, "strides": strides, "version": 3}
        if device is not None:
            self.__dlpack_device__ = lambda: (2, device)


def pointer_error(vadd, c) -> str:
    a = mettle.zeros(4)
    with pytest.raises((TypeError, ValueError)) as info:
        vadd.vadd[1, 4](a, a, c, 4)
    return f"{type(info.value).__name__}: {info.value}"


def test_pointer_errors_name_the_kernel_and_the_parameter(vadd):
    head = "kernel vadd: parameter 2 `c` (float32*): "
    assert pointer_error(vadd, mettle.zeros(4, "int32")) == \
        "TypeError: " + head + "expected an array of float32, got int32"
    assert pointer_error(vadd, np.zeros(4, np.float32)) == \
        "ValueError: " + head + "a host array (numpy.ndarray) is not device memory: copy it " \
        "with mettle.to_device(...) (or pass a GPU tensor/array)"
    assert pointer_error(vadd, 4) == \
        "TypeError: " + head + "got builtins.int, not an array: pass a device array (mettle, " \
        "torch, CuPy, Numba, JAX, DLPack) or None for a null pointer"
    base = mettle.zeros(16)
    assert pointer_error(vadd, CudaArray(base, shape=(4, 2), strides=(4, 16))) == \
        "ValueError: " + head + "the array is not row-major (a transposed or step view): " \
        "kernels index raw memory from its base; pass a contiguous copy (.contiguous(), " \
        "numpy.ascontiguousarray)"
    assert pointer_error(vadd, CudaArray(base, device=1)) == \
        "ValueError: " + head + "the array is on device 1, the kernel on device 0"
    host = np.zeros(4, np.float32)
    foreign = CudaArray(base)
    foreign.__cuda_array_interface__["data"] = (host.ctypes.data, False)
    assert pointer_error(vadd, foreign) == \
        "ValueError: " + head + "the array is in host memory, not on a CUDA device: copy it " \
        "with mettle.to_device(...)"


def test_foreign_arrays_and_null_pointers_are_passed(vadd, fake_driver):
    base = mettle.zeros(8)
    a = CudaArray(base, shape=(2, 3), strides=(16, 4))          # rows padded to 4 elements
    vadd.vadd[1, 4](a, None, ctypes.c_void_p(base.ptr + 16), 4)
    assert cells(fake_driver)[:3] == [struct.pack("<Q", v).hex()
                                      for v in (base.ptr, 0, base.ptr + 16)]


class DLPackOnDevice:
    """NumPy's DLPack capsule, with the device claimed to be CUDA 0: exercises the reader."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (2, 0)


def test_dlpack_tensors_are_read_through_their_capsule(vadd, fake_driver):
    host = np.zeros(8, np.float32)
    a = mettle.zeros(4)
    vadd.vadd[1, 4](a, a, DLPackOnDevice(host[2:6]), 4)
    assert cells(fake_driver)[2] == struct.pack("<Q", host.ctypes.data + 8).hex()
    with pytest.raises(TypeError, match="expected an array of float32, got int16"):
        vadd.vadd[1, 4](a, a, DLPackOnDevice(np.zeros(4, np.int16)), 4)
    with pytest.raises(ValueError, match="not row-major"):
        vadd.vadd[1, 4](a, a, DLPackOnDevice(np.zeros(8, np.float32)[::2]), 4)
    with pytest.raises(ValueError, match="not row-major"):
        vadd.vadd[1, 4](a, a, DLPackOnDevice(np.zeros((4, 2), np.float32).T), 4)
    vadd.vadd[1, 4](a, a, DLPackOnDevice(np.zeros((4, 6), np.float32)[:, :4]), 4)  # padded


class FakeTorchTensor:
    """Quacks like a CUDA torch.Tensor (the runtime reads torch tensors directly)."""
    __module__ = "torch"

    class device:
        type, index = "cuda", 0

    def __init__(self, base):
        self.base = base
        self.dtype = "torch.float32"

    def data_ptr(self):
        return self.base.ptr

    def is_contiguous(self):
        return True


def test_torch_tensors_launch_on_torchs_current_stream(vadd, fake_driver, monkeypatch):
    monkeypatch.setattr(runtime_cuda, "_torch_current_stream", lambda ordinal: 0x5150)
    t = FakeTorchTensor(mettle.zeros(4))
    vadd.vadd[1, 4](t, t, t, 4)
    assert fake_driver.calls("cuLaunchKernel")[-1]["stream"] == "0x5150"
    vadd.vadd[1, 4](t, t, t, 4, stream=0)        # an explicit stream wins
    assert fake_driver.calls("cuLaunchKernel")[-1]["stream"] == "0x0"


def test_streams_of_every_kind(vadd, fake_driver):
    a = mettle.zeros(4)
    s = mettle.Stream()
    [created] = fake_driver.calls("cuStreamCreate")

    class TorchLike:
        cuda_stream = 0x77

    class Protocol:
        def __cuda_stream__(self):
            return (0, 0x99)
    for stream, expected in ((s, created["stream"]), (0x1234, "0x1234"), (TorchLike(), "0x77"),
                             (Protocol(), "0x99"), (None, "0x0")):
        vadd.vadd[1, 4](a, a, a, 4, stream=stream)
        assert fake_driver.calls("cuLaunchKernel")[-1]["stream"] == expected
    with pytest.raises(TypeError, match="stream: expected a mettle.Stream"):
        vadd.vadd[1, 4](a, a, a, 4, stream="default")
    s.synchronize()
    s.close()
    assert fake_driver.calls("cuStreamDestroy_v2")[-1]["stream"] == created["stream"]


def test_large_dynamic_shared_memory_is_opted_into_once(vadd, fake_driver):
    a = mettle.zeros(4)
    for _ in range(2):
        vadd.vadd[1, 4](a, a, a, 4, shared=100_000)
    assert [c["value"] for c in fake_driver.calls("cuFuncSetAttribute")] == ["100000"]


def test_a_kernels_tile_memory_from_its_signature_is_always_given(vadd, fake_driver):
    """A signature's shared_bytes (tiles in dynamic workgroup memory) is the least every
    launch gets: a launch without shared= gets it, a larger one keeps its own."""
    from toolchain.runtime.module import Module
    from toolchain.runtime.signature import Signature
    doc = vadd.signature.to_json()
    doc["kernels"][0]["shared_bytes"] = 81920
    sig = Signature.from_json(doc)
    assert sig.kernels["vadd"].shared_bytes == 81920 and sig.to_json() == doc
    mod = Module("ptx", vadd.artifact, sig)
    a = mettle.zeros(4)
    mod.vadd[1, 4](a, a, a, 4)
    mod.vadd[1, 4](a, a, a, 4, shared=100_000)
    mod.vadd.launch(a, a, a, 4, grid=1, block=4, shared=16)
    assert [c["shared"] for c in fake_driver.calls("cuLaunchKernel")[-3:]] == \
        ["81920", "100000", "81920"]
    assert "shared_bytes" not in vadd.signature.to_json()["kernels"][0]


def test_driver_errors_name_the_kernel(vadd, monkeypatch):
    a = mettle.zeros(4)
    vadd.vadd[1, 4](a, a, a, 4)
    monkeypatch.setenv("METTLE_FAKE_CUDA_FAIL", "cuLaunchKernel=719")
    with pytest.raises(mettle.LaunchError) as info:
        vadd.vadd[1, 4](a, a, a, 4)
    assert str(info.value) == ("kernel vadd: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED "
                               "(719): reported by the Mettle fake CUDA driver")
    assert info.value.kernel == "vadd" and info.value.cause.code == 719


def test_a_module_the_jit_refuses_names_the_kernel_and_carries_the_log(fake_driver,
                                                                      monkeypatch):
    mod = mettle.compile(VADD, arch="sm_90a")
    monkeypatch.setenv("METTLE_FAKE_CUDA_FAIL", "cuModuleLoadDataEx=218")
    with pytest.raises(mettle.LaunchError) as info:
        mod.vadd[1, 1](None, None, None, 0)
    assert str(info.value).startswith("kernel vadd: cannot load <source>.mettle: "
                                      "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218)")
    assert "fake JIT failure injected" in str(info.value)


def test_geometry_errors(vadd):
    with pytest.raises(TypeError, match=r"launch as kernel\[grid, block\]"):
        vadd.vadd[4]
    with pytest.raises(ValueError, match="kernel vadd: grid dimensions must be positive"):
        vadd.vadd[0, 32]
    with pytest.raises(ValueError, match="kernel vadd: block must have 1 to 3 dimensions"):
        vadd.vadd[1, (1, 1, 1, 1)]
    fixed = mettle.compile(FIXED, arch="sm_90a")
    fixed.fixed[1, 64]
    with pytest.raises(ValueError, match=r"kernel fixed is declared with block = \(64, 1, 1\)"):
        fixed.fixed[1, 32]


def test_unknown_kernels(vadd):
    with pytest.raises(AttributeError, match="has no kernel 'vsub' \\(kernels: vadd\\)"):
        vadd.vsub
    with pytest.raises(KeyError):
        vadd["vsub"]


def test_loaded_kernel_facts(vadd, fake_driver):
    k = vadd.vadd
    assert k.registers == 16 and k.local_bytes == 0
    assert k.spills == {"stack": 0, "spill_stores": 0, "spill_loads": 0}
    assert k.occupancy(256) == 8 and k.occupancy((32, 2)) == 32
    assert fake_driver.calls("cuOccupancyMaxActiveBlocksPerMultiprocessor")[-1]["blockSize"] \
        == "64"


def _fresh(source: str):
    """The source loaded into a fresh runtime (a new module, as a new process would)."""
    runtime_cuda.reset()
    return mettle.compile(source, arch="sm_90a")


@pytest.mark.parametrize("local", [0, 24])
def test_spills_survive_a_jit_cache_hit(fake_driver, monkeypatch, local):
    # The driver's JIT cache answers a PTX text compiled before with an empty info log, so
    # the log alone cannot say; the figures must not depend on whether the cache hit.
    monkeypatch.setenv("METTLE_FAKE_CUDA_JIT_CACHE", "1")
    monkeypatch.setenv("METTLE_FAKE_CUDA_LOCAL_BYTES", str(local))
    want = {"stack": local, "spill_stores": local, "spill_loads": local}
    first = _fresh(VADD).vadd
    assert first.spills == want
    again = _fresh(VADD).vadd
    assert again.module.backend().module.info_log == ""       # the cache hit
    loads = len(fake_driver.calls("cuModuleLoadDataEx"))
    assert again.spills == want and again.spills == want
    # no local memory: no stack and no spills, with no second compile; else one compile
    # of a text the cache has not seen
    assert len(fake_driver.calls("cuModuleLoadDataEx")) == loads + (local > 0)


def test_events_and_bench(vadd, fake_driver):
    a = mettle.zeros(4)
    start, end = mettle.Event().record(), mettle.Event()
    vadd.vadd[1, 4](a, a, a, 4)
    end.record()
    assert start.elapsed_ms(end) == 1.0        # the fake's fixed answer
    timing = mettle.bench(lambda: vadd.vadd[1, 4](a, a, a, 4), rep=5, warmup=2, flush_l2=True)
    assert timing.samples == (1.0,) * 5 and timing.median_ms == 1.0
    memsets = fake_driver.calls("cuMemsetD8_v2")
    assert len(memsets) == 5 + 1 and memsets[-1]["bytes"] == str(1 << 20)  # zeros() + 5 flushes
    assert len(fake_driver.calls("cuLaunchKernel")) == 1 + 2 + 5


def test_device_arrays_round_trip_and_speak_the_cuda_array_interface(fake_driver):
    host = np.arange(12, dtype=np.int16).reshape(3, 4)
    d = mettle.to_device(host)
    assert (d.shape, d.dtype, d.nbytes) == ((3, 4), np.dtype(np.int16), 24)
    np.testing.assert_array_equal(d.numpy(), host)
    cai = d.__cuda_array_interface__
    assert cai == {"shape": (3, 4), "typestr": "<i2", "data": (d.ptr, False), "strides": None,
                   "version": 3}
    d.free()
    assert fake_driver.calls("cuMemFree_v2")[-1]["dptr"] == f"0x{cai['data'][0]:x}"


def test_no_device_is_a_clear_launch_error(tmp_path, monkeypatch):
    monkeypatch.setenv("METTLE_CUDA_DRIVER", str(tmp_path / "libcuda.so.1"))
    runtime_cuda.reset()
    try:
        mod = mettle.compile(VADD, arch="sm_90a")        # compiling needs no GPU
        with pytest.raises(mettle.LaunchError, match="kernel vadd: no CUDA device to run on"):
            mod.vadd[1, 1](None, None, None, 0)
    finally:
        runtime_cuda.reset()


class RefusingInterface:
    """A library array whose interface raises (as a CPU JAX array's CUDA interface does)."""

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("a CPU array has no CUDA array interface")


def test_an_interface_that_raises_is_a_value_error_naming_the_parameter(vadd):
    a = mettle.zeros(4)
    with pytest.raises(ValueError, match=r"kernel vadd: parameter 0 `a` \(float32\*\): cannot "
                       "read the device address of this RefusingInterface \\(AttributeError: "
                       "a CPU array has no CUDA array interface\\)"):
        vadd.vadd[1, 4](RefusingInterface(), a, a, 4)


def test_two_devices_switch_contexts_and_keep_arrays_apart(fake_driver, monkeypatch):
    monkeypatch.setenv("METTLE_FAKE_CUDA_DEVICES", "2")
    on0 = mettle.compile(VADD, arch="sm_90a", device=0)
    on1 = mettle.compile(VADD, arch="sm_90a", device=1)
    a0, a1 = mettle.zeros(4, device=0), mettle.zeros(4, device=1)
    on0.vadd[1, 4](a0, a0, a0, 4)
    on1.vadd[1, 4](a1, a1, a1, 4)
    fake_driver.clear()
    on0.vadd[1, 4](a0, a0, a0, 4)              # device 1 was current: switch back first
    assert [line.split()[0] for line in fake_driver.lines()] == ["cuCtxSetCurrent",
                                                                 "cuLaunchKernel"]
    with pytest.raises(ValueError, match=r"parameter 0 `a` \(float32\*\): the array is on "
                       "device 1, the kernel on device 0"):
        on0.vadd[1, 4](a1, a0, a0, 4)


def test_a_new_thread_gets_the_context_made_current(vadd, fake_driver):
    import threading
    a = mettle.zeros(4)
    vadd.vadd[1, 4](a, a, a, 4)
    fake_driver.clear()
    errors = []
    thread = threading.Thread(target=lambda: _launch_or_record(vadd, a, errors))
    thread.start()
    thread.join()
    assert errors == []
    assert [line.split()[0] for line in fake_driver.lines()] == ["cuCtxSetCurrent",
                                                                 "cuLaunchKernel"]
    fake_driver.clear()
    vadd.vadd[1, 4](a, a, a, 4)                 # this thread's context is still current
    assert [line.split()[0] for line in fake_driver.lines()] == ["cuLaunchKernel"]


def _launch_or_record(vadd, a, errors):
    try:
        vadd.vadd[1, 4](a, a, a, 4)
    except Exception as exc:  # noqa: BLE001
        errors.append(exc)
