"""`--target` on the command line: --print-target names the host target it selects, an
unknown one is a usage error (exit 2), and --emit-obj writes each target's object format."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.host.support import REPO, compile_cmd

SOURCE = "fn main() -> int32 { return 0; }\n"


def _mettle(*args):
    return subprocess.run(compile_cmd(*args), cwd=REPO, capture_output=True, text=True)


@pytest.mark.parametrize("target, name", [("x86_64-linux", "x86_64"),
                                          ("aarch64-linux", "aarch64-linux"),
                                          ("x86_64-windows", "x86_64-windows")])
def test_print_target_names_the_host_target(target, name):
    r = _mettle("--print-target", f"--target={target}")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["target"] == name


def test_unknown_target_is_a_usage_error():
    r = _mettle("--print-target", "--target=riscv64-linux")
    assert r.returncode == 2 and "E0090" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("target, magic", [("x86_64-linux", b"\x7fELF\x02\x01\x01"),
                                           ("aarch64-linux", b"\x7fELF\x02\x01\x01"),
                                           ("x86_64-windows", b"\x64\x86")])
def test_emit_obj_format(tmp_path, target, magic):
    src = tmp_path / "p.mettle"
    src.write_text(SOURCE)
    out = tmp_path / "p.o"
    r = _mettle("--emit-obj", str(src), "-o", str(out), f"--target={target}")
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data.startswith(magic)
    if target == "aarch64-linux":
        assert int.from_bytes(data[18:20], "little") == 183      # EM_AARCH64
