"""toolchain.providers.cuda.tensor_map (the Python side of tensor_transfer_workgroup's view)
against the fake driver, which records cuTensorMapEncodeTiled's arguments and writes them
into the 128-byte map: the geometry gpu.md prescribes reaches the driver (rank-1 strides
without the element size, box = tile * element stride, no interleave/swizzle/L2, zero fill),
and device_view uploads exactly that map, at the requested offset."""
from __future__ import annotations

import pytest

from toolchain.providers.cuda import driver, tensor_map
from toolchain.providers.cuda.fake import tensor_map as fake_map

F32_3D = dict(element="f32", extents=(40, 7, 3), strides=(4, 192, 1344), tiles=(8, 4, 2),
              element_strides=(1, 2, 3))


def _image(base, dtype, extents, strides, tiles, element_strides) -> bytes:
    box = [t * e for t, e in zip(tiles, element_strides)]
    return fake_map.image(base, dtype, extents, strides[1:], box, element_strides)


def test_encode_tiled_passes_the_prescribed_geometry(fake_driver):
    image = tensor_map.encode_tiled(0x10000, **F32_3D)
    [call] = fake_driver.calls("cuTensorMapEncodeTiled")
    assert (call["dtype"], call["rank"], call["base"]) == ("7", "3", "0x10000")
    assert (call["dims"], call["strides"]) == ("40,7,3", "192,1344")
    assert (call["box"], call["elementStrides"]) == ("8,8,6", "1,2,3")
    assert [call[k] for k in ("interleave", "swizzle", "l2", "oob")] == ["0"] * 4
    assert image == _image(0x10000, 7, (40, 7, 3), (4, 192, 1344), (8, 4, 2), (1, 2, 3))


def test_rank_one_has_no_global_strides(fake_driver):
    tensor_map.encode_tiled(0x20000, "u8", (64,), (1,), (32,), (1,))
    [call] = fake_driver.calls("cuTensorMapEncodeTiled")
    assert (call["dtype"], call["rank"], call["dims"], call["strides"]) == ("0", "1", "64", "")


def test_refused_geometry_raises_the_driver_error(fake_driver):
    with pytest.raises(driver.CudaError):
        tensor_map.encode_tiled(0x10000, "f32", (10, 10), (4, 40), (4, 4), (1, 1))
    [call] = fake_driver.calls("cuTensorMapEncodeTiled")
    assert call["invalid"] == "strides"


@pytest.mark.parametrize("offset", [0, 8])
def test_device_view_uploads_the_map(fake_driver, offset):
    with driver.Device(0) as dev:
        tensor = dev.alloc(4096)
        buf, view = tensor_map.device_view(dev, tensor.ptr, offset=offset, **F32_3D)
        assert view == buf.ptr + offset
        stored = bytes(dev.download(buf))
    assert stored[offset:] == _image(tensor.ptr, 7, (40, 7, 3), (4, 192, 1344), (8, 4, 2),
                                     (1, 2, 3))
    assert len(stored) == tensor_map.MAP_BYTES + offset
