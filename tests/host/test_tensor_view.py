"""std/gpu's gpu_tensor_view (the host side of tensor_transfer_workgroup's `view:`) against the
fake CUDA driver: the recorded cuTensorMapEncodeTiled arguments (dtype, rank, dims, rank-1
byte strides, box = tile * element stride, element strides, no interleave/swizzle/L2, zero
fill), a 64-byte aligned host map, and a 128-byte device copy of exactly that map (the
program reads the device copy back and prints it; the fake writes its arguments into the map).
Failure paths return 0 and free what they allocated. The same program built for AArch64
Linux (qemu) and Windows x64 (Wine) must log the same calls as the x86-64 build: the
12-argument call passes arguments on the stack there.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from toolchain.providers.cuda.fake import build as fake_build
from toolchain.providers.cuda.fake import tensor_map as fake_map

from .cross import build_for, normalized_driver_log, run_on, why_not_runnable
from .support import build, run

pytestmark = pytest.mark.skipif(fake_build.compiler() is None or not fake_build.SOURCE.exists(),
                                reason="no C compiler for the fake CUDA driver")

# Each case: element code, extents, rank-1 byte strides, tiles, element strides.
CASES = [
    (7, (40, 7, 3), (192, 1344), (8, 4, 2), (1, 2, 3)),        # f32, rank 3
    (0, (64,), (), (32,), (1,)),                                # u8, rank 1
    (8, (6, 5, 4, 3, 2), (48, 240, 960, 2880), (2, 2, 2, 2, 2), (1, 1, 2, 1, 1)),  # f64, rank 5
]

PROGRAM = r"""
import "std/io";
import "std/gpu";

fn hex(bytes: uint8*, n: int32) {
    var digits: cstring = "0123456789abcdef";
    var i: int32 = 0;
    while (i < n) {
        putchar((int32)digits[(int32)bytes[i] >> 4]);
        putchar((int32)digits[(int32)bytes[i] & 15]);
        i = i + 1;
    }
    newline();
}

// Makes the view, reads the device copy back and prints "view" and its bytes 8.. (the
// fake's map starts with the base address, checked here because it differs per run).
fn show(base: int64, element: int32, rank: int32, extents: int64*, strides: int64*,
        tiles: int32*, steps: int32*) {
    var view: int64 = gpu_tensor_view(base, element, rank, extents, strides, tiles, steps);
    if (view == 0) {
        var scratch: uint8[128];
        print("no view, status ");
        println_int(gpu_tensor_map_encode(&scratch[0], base, element, rank, extents, strides,
            tiles, steps));
        return;
    }
    var back: uint8[128];
    if (gpu_to_host(&back[0], view, 128) != 0) { println("read back failed"); return; }
    if (*(int64*)&back[0] != base) { println("wrong base"); return; }
    print("view ");
    hex(&back[8], 120);
    gpu_free(view);
}

fn main() -> int32 {
    if (gpu_init() == 0) { println("no GPU"); return 2; }
    var base: int64 = gpu_malloc(65536);
    var extents: int64[5];
    var strides: int64[4];
    var tiles: int32[5];
    var steps: int32[5];
@CASES@
    // a stride that is not a multiple of 16 bytes: the encoder refuses
    extents[0] = 10; extents[1] = 10; strides[0] = 40; tiles[0] = 4; tiles[1] = 4;
    steps[0] = 1; steps[1] = 1;
    show(base, GPU_TENSOR_F32, 2, &extents[0], &strides[0], &tiles[0], &steps[0]);
    // rank 6 is refused before the driver is called
    show(base, GPU_TENSOR_F32, 6, &extents[0], &strides[0], &tiles[0], &steps[0]);
    println("done");
    return 0;
}
"""


def _source() -> str:
    body = []
    for element, extents, strides, tiles, steps in CASES:
        for d, e in enumerate(extents):
            body.append(f"    extents[{d}] = {e}; tiles[{d}] = {tiles[d]}; "
                        f"steps[{d}] = {steps[d]};")
        for d, s in enumerate(strides):
            body.append(f"    strides[{d}] = {s};")
        body.append(f"    show(base, {element}, {len(extents)}, &extents[0], &strides[0], "
                    "&tiles[0], &steps[0]);")
    return PROGRAM.replace("@CASES@", "\n".join(body))


SOURCE = _source()


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory) -> str:
    return str(fake_build.build(tmp_path_factory.mktemp("fake")))


def _fields(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S+)", line))


def _expected_image(element, extents, strides, tiles, steps) -> bytes:
    """Bytes 8..127 of the fake's map for these arguments."""
    box = [t * s for t, s in zip(tiles, steps)]
    return fake_map.image(0, element, extents, strides, box, steps)[8:]


def _run(exe, driver, log, extra=None, target="x86_64-linux"):
    env = {"METTLE_CUDA_DRIVER": driver, "METTLE_FAKE_CUDA_LOG": str(log)}
    env.update(extra or {})
    return run_on(target, exe, env_extra=env)


def test_view_encodes_and_copies_the_map(tmp_path, fake_driver):
    exe = build(tmp_path, SOURCE)
    log = tmp_path / "log.txt"
    out = run(exe, {"METTLE_CUDA_DRIVER": fake_driver, "METTLE_FAKE_CUDA_LOG": str(log)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-3:] == ["no view, status 1", "no view, status 1", "done"]
    text = log.read_text()
    base = int(re.search(r"^cuMemAlloc_v2 dptr=0x(\w+) bytesize=65536", text, re.M).group(1), 16)
    encodes = [_fields(x) for x in text.splitlines() if x.startswith("cuTensorMapEncodeTiled ")]
    # three good cases, the bad stride twice (view, then the status query); rank 6 never
    assert len(encodes) == 5
    for case, call, shown in zip(CASES, encodes, lines):
        element, extents, strides, tiles, steps = case
        assert int(call["base"], 16) == base and int(call["map"], 16) % 64 == 0
        assert (int(call["dtype"]), int(call["rank"])) == (element, len(extents))
        assert call["dims"] == ",".join(map(str, extents))
        assert call.get("strides", "") == ",".join(map(str, strides))
        assert call["box"] == ",".join(str(t * s) for t, s in zip(tiles, steps))
        assert call["elementStrides"] == ",".join(map(str, steps))
        assert [call[k] for k in ("interleave", "swizzle", "l2", "oob")] == ["0"] * 4
        assert "invalid" not in call
        assert shown == "view " + _expected_image(*case).hex()
    assert all(c["invalid"] == "strides" for c in encodes[3:])
    # each view: 128 device bytes, the map copied there from the encoded host map, freed
    maps = [c["map"] for c in encodes[:3]]
    allocs = re.findall(r"^cuMemAlloc_v2 dptr=(0x\w+) bytesize=128 ", text, re.M)
    copies = re.findall(r"^cuMemcpyHtoD_v2 dst=(0x\w+) src=(0x\w+) bytes=(\d+)$", text, re.M)
    assert copies == [(a, m, "128") for a, m in zip(allocs, maps)]
    assert re.findall(r"^cuMemFree_v2 dptr=(0x\w+)$", text, re.M) == allocs


@pytest.mark.parametrize("fail, status", [("cuMemcpyHtoD_v2=1", 0), ("cuMemAlloc_v2=2", 0),
                                          ("cuTensorMapEncodeTiled=1", 1)])
def test_failures_return_zero_and_free(tmp_path, fake_driver, fail, status):
    """A failed copy frees the 128 bytes it allocated; a failed allocation or encoding
    allocates nothing (the status line re-runs the encoder: 0 when only memory failed)."""
    exe = build(tmp_path, SOURCE)
    log = tmp_path / "log.txt"
    out = _run(exe, fake_driver, log, {"METTLE_FAKE_CUDA_FAIL": fail})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:3] == [f"no view, status {status}"] * 3
    text = log.read_text()
    allocs = re.findall(r"^cuMemAlloc_v2 dptr=(0x\w+) bytesize=128 ", text, re.M)
    assert len(allocs) == (3 if fail.startswith("cuMemcpy") else 0)
    assert re.findall(r"^cuMemFree_v2 dptr=(0x\w+)$", text, re.M) == allocs


CROSS = {"aarch64-linux": "aarch64-linux-gnu-gcc", "x86_64-windows": "x86_64-w64-mingw32-gcc"}


@pytest.mark.parametrize("target", sorted(CROSS))
def test_cross_targets_log_the_same_calls(tmp_path, fake_driver, target):
    reason = why_not_runnable(target)
    if reason or shutil.which(CROSS[target]) is None:
        pytest.skip(reason or f"{CROSS[target]} is missing")
    if target == "x86_64-windows":
        driver = tmp_path / "nvcuda.dll"
        cmd = [CROSS[target], "-shared", "-O1", "-std=c11", "-D__USE_MINGW_ANSI_STDIO=1",
               "-o", str(driver), str(fake_build.SOURCE)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    else:
        mp = pytest.MonkeyPatch()
        mp.setenv("CC", CROSS[target])
        try:
            driver = fake_build.build(tmp_path / "a64")
        finally:
            mp.undo()
    results = {}
    for t, drv in (("x86_64-linux", fake_driver), (target, str(driver))):
        exe = build_for(tmp_path, SOURCE, t, "view")
        log = tmp_path / f"{t}.log"
        out = _run(exe, drv, log, target=t)
        assert out.returncode == 0, out.stderr
        results[t] = (out.stdout.replace("\r\n", "\n"), normalized_driver_log(log.read_text()))
    assert results[target][1].count("cuTensorMapEncodeTiled ") == 5
    assert results[target] == results["x86_64-linux"]
