"""The dispatch ABI of compiled host programs against the logging fake CUDA driver.

The fake (toolchain/providers/cuda/fake) is built with the system C compiler into a temp
dir; executables find it through METTLE_CUDA_DRIVER (std/gpu dlopens it) and log every
driver call to METTLE_FAKE_CUDA_LOG. Each cuLaunchKernel line is checked field by field,
and each parameter cell's bytes against struct.pack of the argument at its natural width.
"""
from __future__ import annotations

import re
import struct
import subprocess

import pytest

from toolchain.providers.cuda.fake import build as fake_build

from .support import REPO, build, compile_cmd, run

pytestmark = pytest.mark.skipif(fake_build.compiler() is None or not fake_build.SOURCE.exists(),
                                reason="no C compiler for the fake CUDA driver")


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory) -> str:
    return str(fake_build.build(tmp_path_factory.mktemp("fake")))


def launches(log: str) -> list[dict[str, str]]:
    out = []
    for line in log.splitlines():
        if line.startswith("cuLaunchKernel "):
            out.append(dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line)))
    return out


def fake_env(driver: str, log) -> dict[str, str]:
    return {"METTLE_CUDA_DRIVER": driver, "METTLE_FAKE_CUDA_LOG": str(log)}


DISPATCH = r"""
import "std/io";
import "std/gpu";
extern kernel mix(a: int8, b: int16, c: int32, d: int64, e: float32, f: float64, g: float32*);
extern kernel(block = (64, 2, 1)) tile(n: int32, p: int64*);
var PTX: string = ".visible .entry mix(.param .s8 a, .param .s16 b, .param .s32 c,
  .param .s64 d, .param .f32 e, .param .f64 f, .param .u64 g) { ret; }
.visible .entry tile(.param .s32 n, .param .u64 p) { ret; }
.visible .entry empty() { ret; }
";
fn main() -> int32 {
    if (gpu_init() == 0) { println("no GPU"); return 2; }
    var mod: int64 = gpu_module(PTX.chars);
    var buf: int64 = gpu_malloc(256);
    var a: int8 = -3;
    var b: int16 = -1234;
    var c: int32 = 123456789;
    var d: int64 = -5000000000;
    var e: float32 = 1.5;
    var f: float64 = -2.25;
    var s: int64 = gpu_stream_create();
    dispatch mix[grid: (4, 3, 2), block: (32, 4, 1), shared: 1024, stream: s](
        a, b, c, d, e, f, buf);
    dispatch mix[7, 128](a, b, c, d, e, f, buf) on s;
    var h: int64 = gpu_func(mod, "mix");
    dispatch h[block: (2, 2, 2), grid: (1, 1, 9)](a, b, c, d, e, f, buf);
    dispatch tile[work: 1000](1000, buf);
    var z: int64 = gpu_func(mod, "empty");
    dispatch z[1, 1]();
    println("done");
    return 0;
}
"""


def _pointer(log: str, call: str, key: str) -> int:
    m = re.search(rf"^{call} .*?{key}=0x([0-9a-f]+)", log, re.M)
    assert m, f"no {call} in log"
    return int(m.group(1), 16)


def test_dispatch_cells_and_launch_arguments(tmp_path, fake_driver):
    exe = build(tmp_path, DISPATCH)
    log = tmp_path / "log.txt"
    out = run(exe, fake_env(fake_driver, log))
    assert (out.returncode, out.stdout) == (0, "done\n"), out.stderr
    text = log.read_text()
    buf, stream = _pointer(text, "cuMemAlloc_v2", "dptr"), _pointer(text, "cuStreamCreate", "")
    cells = ",".join([struct.pack("<b", -3).hex(), struct.pack("<h", -1234).hex(),
                      struct.pack("<i", 123456789).hex(), struct.pack("<q", -5000000000).hex(),
                      struct.pack("<f", 1.5).hex(), struct.pack("<d", -2.25).hex(),
                      struct.pack("<Q", buf).hex()])
    ls = launches(text)
    assert len(ls) == 5
    keys = ("gx", "gy", "gz", "bx", "by", "bz", "shared")
    geo = lambda L: tuple(int(L[k]) for k in keys)  # noqa: E731
    assert geo(ls[0]) == (4, 3, 2, 32, 4, 1, 1024)
    assert geo(ls[1]) == (7, 1, 1, 128, 1, 1, 0)
    assert geo(ls[2]) == (1, 1, 9, 2, 2, 2, 0)
    assert geo(ls[3]) == (-(-1000 // 128), 1, 1, 64, 2, 1, 0)
    assert geo(ls[4]) == (1, 1, 1, 1, 1, 1, 0)
    assert [int(L["stream"], 16) for L in ls] == [stream, stream, 0, 0, 0]
    for L in ls[:3]:
        assert (L["kernel"], L["cells"], L["extra"]) == ('"mix"', cells, "0x0")
    assert ls[3]["cells"] == struct.pack("<i", 1000).hex() + "," + struct.pack("<Q", buf).hex()
    assert ls[4]["kernelParams"] == "0x0" and ls[4]["kernel"] == '"empty"'
    # typed "mix" is looked up once (the cache is keyed by the name pointer) and reused;
    # the untyped launch uses gpu_func's handle, the work-sized one tile's
    looked_up = re.findall(r"^cuModuleGetFunction hfunc=(0x[0-9a-f]+) .*name=(\S+)", text, re.M)
    assert looked_up[0][1] == '"mix"' and ls[0]["f"] == ls[1]["f"] == looked_up[0][0]
    assert ls[2]["f"] == looked_up[1][0] and ls[3]["f"] == looked_up[2][0]


def test_failed_launch_exits_with_driver_code(tmp_path, fake_driver):
    exe = build(tmp_path, DISPATCH)
    env = fake_env(fake_driver, tmp_path / "log.txt")
    env["METTLE_FAKE_CUDA_FAIL"] = "cuLaunchKernel=719"
    out = run(exe, env)
    assert out.returncode == 719 % 256
    assert "cuLaunchKernel failed with CUDA error 719" in out.stderr
    assert out.stdout == ""


def test_missing_driver_means_no_gpu(tmp_path):
    exe = build(tmp_path, DISPATCH)
    out = run(exe, {"METTLE_CUDA_DRIVER": str(tmp_path / "absent" / "libcuda.so.1")})
    assert (out.returncode, out.stdout) == (2, "no GPU\n")


@pytest.fixture(scope="module")
def vadd_app(tmp_path_factory):
    d = tmp_path_factory.mktemp("app")
    for args in (["--emit-ptx", "app/kernels.mettle", "-o", str(d / "kernels.ptx"),
                  "--gpu-arch=sm_90a"],
                 ["--build", "app/host.mettle", "-o", str(d / "vadd")]):
        r = subprocess.run(compile_cmd(*args), cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return d


def test_vadd_app_against_fake_driver(vadd_app, fake_driver, tmp_path):
    log = tmp_path / "log.txt"
    out = run(vadd_app / "vadd", fake_env(fake_driver, log), cwd=tmp_path)
    assert (out.returncode, out.stdout) == (0, f"vadd: OK {1 << 20} elements\n"), out.stderr
    (launch,) = launches(log.read_text())
    assert (launch["gx"], launch["bx"], launch["kernel"]) == (str((1 << 20) // 256), "256",
                                                              '"vadd"')
    sizes = [len(c) // 2 for c in launch["cells"].split(",")]
    assert sizes == [8, 8, 8, 4]
    assert launch["cells"].split(",")[3] == struct.pack("<i", 1 << 20).hex()
    assert log.read_text().count("computed=vadd") == 1


def test_vadd_app_without_gpu(vadd_app, tmp_path):
    out = run(vadd_app / "vadd", {"METTLE_CUDA_DRIVER": str(tmp_path / "nope.so")})
    assert (out.returncode, out.stdout) == (2, "no GPU\n")


def test_vadd_app_detects_wrong_results(vadd_app, fake_driver, tmp_path):
    """A driver that launches nothing leaves c zeroed: the CPU check must catch it."""
    env = fake_env(fake_driver, tmp_path / "log.txt")
    # a 2-byte count cell: a layout the fake's vadd refuses to compute (it accepts 4- and
    # 8-byte counts, and an 8-byte read of the 4-byte n cell could see zeros beyond it)
    env["METTLE_FAKE_CUDA_CELLS"] = "8,8,8,2"
    out = run(vadd_app / "vadd", env)
    assert out.returncode == 1 and out.stdout.startswith("vadd: mismatch at ")

