"""Hardware: tensor_transfer_workgroup, rank 1, 2, 3 and 5, both directions, with boxes that
reach outside the tensor (zero fill on load, discard on store).

Each case runs the round-trip kernel four ways on the same random non-zero data: with a
driver-encoded tensor map (native TMA on sm_90), with a null view and with a view moved off
its 64-byte alignment (both must fall back to replay at run time), and compiled without a
view (replay chosen at compile time). The loaded tile and the stored tensor must equal the
numpy oracle bit for bit in every way; `dst` starts poisoned, so every element the store
must not touch is checked too. `METTLE_GPU_SANITIZER=memcheck|racecheck` runs it all under
compute-sanitizer.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar, TensorView
from tests.tensor.transfer_cases import CARRIER, CASES, NP, expected, kernel
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

WAYS = ("native", "null_view", "misaligned_view", "no_view", "inferred_direction")


def random_data(case, rng) -> np.ndarray:
    dt = NP[case.element]
    if np.dtype(dt).kind == "f":
        x = rng.standard_normal(case.total).astype(dt)
        x[x == 0] = 1
    else:
        x = rng.integers(1, 100, case.total).astype(dt)
    return x


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_transfer_round_trip(gpu_run, tmp_path, case):
    arch = detect_local_arch() or "sm_90a"
    rng = np.random.default_rng(case.rank)
    src = random_data(case, rng)
    poison = NP[case.element](-9) if np.dtype(NP[case.element]).kind != "u" else \
        NP[case.element](250)
    dst0 = np.full(case.total, poison, dtype=NP[case.element])
    want_tile, want_dst = expected(case, src, dst0)
    carrier = CARRIER[case.element]
    geo = dict(element=case.element, extents=case.extents, strides=case.strides,
               tiles=case.tiles, element_strides=case.element_strides)
    for way in WAYS:
        path = tmp_path / f"{case.name}_{way}.mettle"
        path.write_text(kernel(case, view=way != "no_view",
                               inferred=way == "inferred_direction"))
        ptx = compile_file(str(path), Options(emit="ptx", gpu_arch=arch)).data.decode()
        views = [TensorView(of, null=way == "null_view",
                            offset=8 if way == "misaligned_view" else 0, **geo)
                 for of in ("src", "dst")]
        out = gpu_run(ptx, case.name, grid=1, block=128, args=[
            Buffer("src", carrier, data=src.view(carrier)),
            Buffer("dst", carrier, data=dst0.view(carrier), output=True),
            Buffer("tile_out", carrier, case.tile_elements, poison=7, output=True),
            *views, *(Scalar("int32", c) for c in case.coords)])
        assert out["tile_out"].tobytes() == want_tile.view(carrier).tobytes(), \
            f"{case.name} {way}: loaded tile differs"
        assert out["dst"].tobytes() == want_dst.view(carrier).tobytes(), \
            f"{case.name} {way}: stored tensor differs"
