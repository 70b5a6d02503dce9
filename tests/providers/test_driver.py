"""toolchain.providers.cuda.driver over the fake driver: lazy loading, checked calls,
the probe's skip reasons, memory, module loading with JIT logs, and launches."""
from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

from toolchain.providers.cuda import driver

REPO_ROOT = Path(__file__).resolve().parents[2]
PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry vadd(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n) { ret; }
"""


def test_import_loads_no_library_until_first_call(fake_cuda_lib):
    # A fresh process: is the driver mapped after the import, and after the first call?
    code = ("import toolchain.providers.cuda.driver as d\n"
            "mapped = lambda: LIB in open('/proc/self/maps').read()\n"
            "before = mapped(); d.probe(); print(before, mapped())\n")
    env = {"METTLE_CUDA_DRIVER": str(fake_cuda_lib), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", f"LIB = {str(fake_cuda_lib)!r}\n" + code],
                          capture_output=True, text=True, env=env, cwd=str(REPO_ROOT))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_probe_names_a_missing_library(monkeypatch, tmp_path):
    monkeypatch.setenv(driver.ENV_LIBRARY, str(tmp_path / "libcuda.so.1"))
    driver.reset()
    try:
        assert driver.probe().startswith(f"no {tmp_path / 'libcuda.so.1'}")
    finally:
        driver.reset()


def test_probe_reports_a_failed_cuinit(fake_driver, monkeypatch):
    monkeypatch.setenv("METTLE_FAKE_CUDA_FAIL", "cuInit=100")
    assert driver.probe().startswith("cuInit failed: CUDA_ERROR_NO_DEVICE")


def test_probe_reports_no_device(fake_driver, monkeypatch):
    monkeypatch.setenv("METTLE_FAKE_CUDA_DEVICES", "0")
    assert driver.probe() == "no CUDA device"


def test_probe_accepts_a_usable_device(fake_driver):
    assert driver.probe() is None
    assert [line.split()[0] for line in fake_driver.lines()] == ["cuInit", "cuDeviceGetCount"]


def test_failed_call_raises_with_function_code_and_driver_text(fake_driver, monkeypatch):
    device = driver.Device(0)
    monkeypatch.setenv("METTLE_FAKE_CUDA_FAIL", "cuCtxSynchronize=719")
    with pytest.raises(driver.CudaError) as caught:
        device.synchronize()
    err = caught.value
    assert (err.function, err.code, err.name) == ("cuCtxSynchronize", 719,
                                                  "CUDA_ERROR_LAUNCH_FAILED")
    assert "cuCtxSynchronize failed: CUDA_ERROR_LAUNCH_FAILED (719)" in str(err)


def test_unknown_error_codes_still_name_the_code(fake_driver, monkeypatch):
    monkeypatch.setenv("METTLE_FAKE_CUDA_FAIL", "cuDriverGetVersion=4242")
    with pytest.raises(driver.CudaError, match=r"CUDA_ERROR_4242 \(4242\)"):
        driver.driver_version()


def test_device_identity(fake_driver):
    with driver.Device(0) as device:
        assert device.name == "Mettle fake CUDA device"
        assert device.uuid == bytes(range(0xA0, 0xB0)).hex()
        assert device.compute_capability == (9, 0)
    assert fake_driver.calls("cuDevicePrimaryCtxRelease_v2") == [{"dev": "0"}]


def test_upload_download_round_trip(fake_driver):
    device = driver.Device(0)
    data = bytes(range(37))
    buf = device.alloc(len(data))
    device.upload(buf, data)
    assert bytes(device.download(buf)) == data
    out = bytearray(5)
    device.memset(buf, 0x7F, 5)
    assert device.download(buf, out=out) == bytearray([0x7F] * 5)
    ptr = buf.ptr
    buf.free()
    buf.free()  # idempotent: the second call must not reach the driver
    assert fake_driver.calls("cuMemFree_v2") == [{"dptr": hex(ptr)}]


def test_bad_ptx_error_carries_the_jit_log(fake_driver, monkeypatch):
    monkeypatch.setenv("METTLE_FAKE_CUDA_FAIL", "cuModuleLoadDataEx=218")
    device = driver.Device(0)
    with pytest.raises(driver.CudaError) as caught:
        device.load_ptx(PTX)
    assert caught.value.name == "CUDA_ERROR_INVALID_PTX"
    assert "fake JIT failure" in caught.value.log
    assert "--- JIT log ---" in str(caught.value)


def test_launch_passes_geometry_and_natural_width_cells(fake_driver):
    device = driver.Device(0)
    function = device.load_ptx(PTX).function("vadd")
    a, b, c = (device.alloc(16) for _ in range(3))
    function.launch((2, 3), 64, [a, b, c, ctypes.c_uint32(4)], shared=100)
    [launch] = fake_driver.calls("cuLaunchKernel")
    assert [launch[k] for k in ("gx", "gy", "gz", "bx", "by", "bz", "shared")] == \
        ["2", "3", "1", "64", "1", "1", "100"]
    expected = [p.to_bytes(8, "little").hex() for p in (a.ptr, b.ptr, c.ptr)] + ["04000000"]
    assert launch["cells"].split(",") == expected
    assert fake_driver.calls("cuFuncSetAttribute") == []


def test_large_dynamic_shared_memory_is_opted_into(fake_driver):
    device = driver.Device(0)
    function = device.load_ptx(PTX).function("vadd")
    buf = device.alloc(4)
    function.launch(1, 32, [buf, buf, buf, ctypes.c_uint32(0)], shared=100 * 1024)
    [attr] = fake_driver.calls("cuFuncSetAttribute")
    assert (attr["attrib"], attr["value"]) == ("8", str(100 * 1024))


def test_events_time_between_records(fake_driver):
    device = driver.Device(0)
    start, end = device.event(), device.event()
    start.record()
    end.record()
    end.synchronize()
    assert start.elapsed_ms(end) == pytest.approx(1.0)
    start.destroy()
    assert len(fake_driver.calls("cuEventDestroy_v2")) == 1
