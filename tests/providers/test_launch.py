"""Launch marshalling: geometry normalisation and kernel-parameter cells (no driver needed)."""
from __future__ import annotations

import ctypes

import pytest

from toolchain.providers.cuda.launch import dim3, make_cell, pack_params


@pytest.mark.parametrize("given, expected", [
    (7, (7, 1, 1)), ((4, 2), (4, 2, 1)), ([3, 2, 5], (3, 2, 5)),
])
def test_dim3_pads_to_three_dimensions(given, expected):
    assert dim3(given, "grid") == expected


@pytest.mark.parametrize("bad", [0, -1, (), (1, 2, 3, 4), (2, 0), (1.5,)])
def test_dim3_rejects_bad_extents(bad):
    with pytest.raises(ValueError, match="grid"):
        dim3(bad, "grid")


def test_cells_hold_values_at_natural_width():
    cells = pack_params([make_cell("int32", -2), make_cell("float64", 1.5),
                         make_cell("ptr", 0x1234_5678_9ABC), ctypes.c_uint8(200)])
    widths = [ctypes.sizeof(c) for c in cells.cells]
    assert widths == [4, 8, 8, 1]
    raw = [ctypes.string_at(cells.pointers[i], widths[i]) for i in range(4)]
    assert raw[0] == (-2).to_bytes(4, "little", signed=True)
    assert raw[1] == ctypes.string_at(ctypes.addressof(ctypes.c_double(1.5)), 8)
    assert raw[2] == (0x1234_5678_9ABC).to_bytes(8, "little")
    assert raw[3] == bytes([200])


def test_no_arguments_pass_null_params():
    assert pack_params([]).as_argument() is None


def test_objects_with_a_cell_method_are_accepted():
    class Buf:
        def cell(self):
            return ctypes.c_uint64(0xDEAD)
    params = pack_params([Buf()])
    assert ctypes.string_at(params.pointers[0], 8) == (0xDEAD).to_bytes(8, "little")


@pytest.mark.parametrize("untyped", [3, 2.5, "x", None])
def test_untyped_python_values_are_refused(untyped):
    with pytest.raises(TypeError, match="typed cell"):
        pack_params([untyped])


def test_unknown_cell_type_is_named():
    with pytest.raises(ValueError, match="int128"):
        make_cell("int128", 1)
