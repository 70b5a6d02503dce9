"""Hardware: views made by a Mettle host program with std/gpu's gpu_tensor_view.

tests/gpu/test_transfer.py encodes its tensor maps in Python; here the round-trip kernel of
tests/tensor/transfer_cases.py is launched by a compiled x86-64 host program that encodes
its two views itself (cuTensorMapEncodeTiled through std/gpu, 12 arguments, a 64-byte
aligned host map copied to a 128-byte device allocation). It runs the kernel once with the
views (native TMA on sm_90 and newer) and once with null views (replay), and writes what
each loaded and stored; both must equal the numpy oracle bit for bit. `dst` starts
poisoned. `METTLE_GPU_SANITIZER=memcheck|racecheck` runs the host under compute-sanitizer.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.gpu.harness import SANITIZER_ERROR_EXIT, SANITIZERS, sanitizer_path
from tests.gpu.test_transfer import random_data
from tests.tensor.transfer_cases import CASES, NP, expected, kernel
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the std/gpu element constant of each descriptor element (a copy only needs the width)
CODE = {"u8": "U8", "i8": "U8", "u16": "U16", "i16": "U16", "f16": "F16", "bf16": "BF16",
        "f32": "F32", "i32": "I32", "u32": "U32", "f64": "F64", "i64": "I64", "u64": "U64"}

HOST = r"""
import "std/io";
import "std/mem";
import "std/gpu";

fn load(name: cstring, buf: uint8*, bytes: int64) -> int64 {
    var fp: cstring = fopen(name, "rb");
    if (fp == 0) { return -1; }
    var got: int64 = fread((cstring)buf, 1, bytes, fp);
    fclose(fp);
    return got;
}

fn save(name: cstring, buf: uint8*, bytes: int64) -> int32 {
    var fp: cstring = fopen(name, "wb");
    if (fp == 0) { return 1; }
    var put: int64 = fwrite((cstring)buf, 1, bytes, fp);
    fclose(fp);
    if (put != bytes) { return 1; }
    return 0;
}

fn main() -> int32 {
    if (gpu_init() == 0) { println("no GPU"); return 2; }
    var ptx: uint8* = (uint8*)malloc(4194304);
    var len: int64 = load("kernel.ptx", ptx, 4194303);
    if (len <= 0) { println("cannot read kernel.ptx"); return 1; }
    ptx[len] = 0;
    var mod: int64 = gpu_module(ptx);
    if (mod == 0) { println("cannot load kernel.ptx"); return 1; }
    var k: int64 = gpu_func(mod, "@NAME@");
    var bytes: int64 = @BYTES@;
    var tile_bytes: int64 = @TILE_BYTES@;
    var hsrc: uint8* = (uint8*)malloc(bytes);
    var hdst0: uint8* = (uint8*)malloc(bytes);
    var hout: uint8* = (uint8*)malloc(bytes);
    var htile: uint8* = (uint8*)malloc(tile_bytes);
    if (load("src.bin", hsrc, bytes) != bytes || load("dst0.bin", hdst0, bytes) != bytes) {
        println("cannot read the data");
        return 1;
    }
    var src: int64 = gpu_malloc(bytes);
    var dst: int64 = gpu_malloc(bytes);
    var tile: int64 = gpu_malloc(tile_bytes);
    var extents: int64[5];
    var strides: int64[4];
    var tiles: int32[5];
    var steps: int32[5];
@GEOMETRY@
    var vin: int64 = gpu_tensor_view(src, GPU_TENSOR_@CODE@, @RANK@, &extents[0],
        &strides[0], &tiles[0], &steps[0]);
    var vout: int64 = gpu_tensor_view(dst, GPU_TENSOR_@CODE@, @RANK@, &extents[0],
        &strides[0], &tiles[0], &steps[0]);
    if (vin == 0 || vout == 0) { println("gpu_tensor_view failed"); return 3; }
@COORDS@
    var way: int32 = 0;
    while (way < 2) {
        var i: int64 = 0;
        while (i < tile_bytes) { htile[i] = 7; i = i + 1; }
        gpu_to_device(src, hsrc, bytes);
        gpu_to_device(dst, hdst0, bytes);
        gpu_to_device(tile, htile, tile_bytes);
        if (way == 0) {
            dispatch k[1, 128](src, dst, tile, vin, vout, @ARGS@);
        } else {
            dispatch k[1, 128](src, dst, tile, (int64)0, (int64)0, @ARGS@);
        }
        var rc: int32 = gpu_sync();
        if (rc != 0) { print("kernel failed: "); println_int(rc); return 4; }
        gpu_to_host(hout, dst, bytes);
        gpu_to_host(htile, tile, tile_bytes);
        var failed: int32 = 0;
        if (way == 0) {
            failed = save("view_dst.bin", hout, bytes) + save("view_tile.bin", htile, tile_bytes);
        } else {
            failed = save("null_dst.bin", hout, bytes) + save("null_tile.bin", htile, tile_bytes);
        }
        if (failed != 0) { println("cannot write the results"); return 5; }
        way = way + 1;
    }
    gpu_free(vin);
    gpu_free(vout);
    println("done");
    return 0;
}
"""


def host_source(case) -> str:
    geometry = []
    for d in range(case.rank):
        geometry.append(f"    extents[{d}] = {case.extents[d]}; tiles[{d}] = {case.tiles[d]}; "
                        f"steps[{d}] = {case.element_strides[d]};")
    for d, s in enumerate(case.strides[1:]):
        geometry.append(f"    strides[{d}] = {s};")
    coords = [f"    var c{d}: int32 = {c};" for d, c in enumerate(case.coords)]
    return (HOST.replace("@NAME@", case.name).replace("@CODE@", CODE[case.element])
            .replace("@RANK@", str(case.rank))
            .replace("@BYTES@", str(case.total * case.size))
            .replace("@TILE_BYTES@", str(case.tile_elements * case.size))
            .replace("@GEOMETRY@", "\n".join(geometry)).replace("@COORDS@", "\n".join(coords))
            .replace("@ARGS@", ", ".join(f"c{d}" for d in range(case.rank))))


def _command(exe: str) -> list[str]:
    sanitizer = os.environ.get("METTLE_GPU_SANITIZER")
    if not sanitizer:
        return [exe]
    if sanitizer not in SANITIZERS:
        raise ValueError(f"METTLE_GPU_SANITIZER must be one of {SANITIZERS}")
    tool = sanitizer_path()
    if tool is None:
        pytest.skip("compute-sanitizer is not on PATH")
    return [tool, "--tool", sanitizer, "--error-exitcode", str(SANITIZER_ERROR_EXIT), exe]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_host_made_views_round_trip(tmp_path, case):
    arch = detect_local_arch() or "sm_90a"
    src = random_data(case, np.random.default_rng(case.rank + 10))
    kind = np.dtype(NP[case.element]).kind
    dst0 = np.full(case.total, NP[case.element](250 if kind == "u" else -9),
                   dtype=NP[case.element])
    want_tile, want_dst = expected(case, src, dst0)
    (tmp_path / "kernel.mettle").write_text(kernel(case, view=True))
    ptx = compile_file(str(tmp_path / "kernel.mettle"), Options(emit="ptx", gpu_arch=arch))
    (tmp_path / "kernel.ptx").write_bytes(ptx.data)
    (tmp_path / "host.mettle").write_text(host_source(case))
    exe = str(tmp_path / "host")
    r = subprocess.run([sys.executable, "-m", "toolchain.compiler", "--build",
                        str(tmp_path / "host.mettle"), "-o", exe], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    src.tofile(tmp_path / "src.bin")
    dst0.tofile(tmp_path / "dst0.bin")
    out = subprocess.run(_command(exe), cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.endswith("done\n"), out.stdout + out.stderr
    for way in ("view", "null"):
        tile = (tmp_path / f"{way}_tile.bin").read_bytes()
        dst = (tmp_path / f"{way}_dst.bin").read_bytes()
        assert tile == want_tile.tobytes(), f"{case.name} {way}: loaded tile differs"
        assert dst == want_dst.tobytes(), f"{case.name} {way}: stored tensor differs"
