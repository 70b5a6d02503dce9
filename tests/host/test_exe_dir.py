"""std/process's exe_dir on every host target (Linux: /proc/self/exe, Windows:
GetModuleFileNameA), the app's load_ptx that uses it, the app hosts building for all three
targets, and link errors that name the source file and point at the `extern` declaration."""
from __future__ import annotations

import subprocess

import pytest

from .cross import TARGETS, build_for, run_on, skip_unless_runnable
from .support import REPO, compile_cmd

LOAD = """import "std/io";
import "std/mem";
import "std/process";
import { load_ptx } from "ptx_file";

fn main() -> int32 {
    var dir: cstring = alloc_zeroed(4096);
    if (exe_dir(dir, 4096) <= 0) { return 3; }
    if (exe_dir(dir, 1) != 0) { return 4; }         // too small: 0, never truncated
    println(dir);
    var text: uint8* = load_ptx("beside.txt");
    if (text == 0) { return 5; }
    print((cstring)text);
    return 0;
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_exe_dir_finds_the_file_beside_the_executable(tmp_path, target):
    skip_unless_runnable(target)
    exe = build_for(tmp_path, LOAD, target, extra=("-I", str(REPO / "app")))
    (tmp_path / "beside.txt").write_text("found beside the executable\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run_on(target, exe, cwd=elsewhere)
    assert r.returncode == 0, r.stdout + r.stderr
    first, second = r.stdout.splitlines()[:2]
    assert first.rstrip("\\/").replace("\\", "/").endswith(tmp_path.name), first
    assert first[-1] in "\\/"
    assert second == "found beside the executable"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("host", ["host.mettle", "gemm_host.mettle"])
def test_the_app_hosts_build_for_every_target(tmp_path, target, host):
    out = tmp_path / f"app-{target}"
    r = subprocess.run(compile_cmd("--build", str(REPO / "app" / host), "-o", str(out),
                                   f"--target={target}"), cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:2] == (b"MZ" if target.endswith("windows") else b"\x7fE")


@pytest.mark.parametrize("target", TARGETS)
def test_an_undefined_extern_is_a_located_link_error(tmp_path, target):
    src = tmp_path / "u.mettle"
    src.write_text("extern fn no_such_function(x: int32) -> int32;\n"
                   "fn main() -> int32 { return no_such_function(1); }\n")
    out = tmp_path / "u.out"
    r = subprocess.run(compile_cmd("--build", str(src), "-o", str(out), f"--target={target}"),
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 1 and not out.exists()
    assert "error[E0601]: undefined symbol 'no_such_function' referenced by " \
        f"{src}" in r.stderr, r.stderr
    assert f"{src}:1:11" in r.stderr and "^^^^" in r.stderr and "<input" not in r.stderr


def test_the_linker_names_its_inputs():
    from toolchain.compiler.diagnostics import CompileError
    from toolchain.linker import link_executable
    with pytest.raises(CompileError) as e:
        link_executable([b"\x7fELF not really"], names=["broken.o"])
    assert "broken.o" in e.value.diagnostics[0].message
