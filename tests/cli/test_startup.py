"""A `mettle --emit-ptx` compile loads only what it uses (issue 14: fast start-up).

Behavioural, not timed (bench/compile_speed.py times it): each case compiles in a fresh
interpreter without `site` (a site-packages `.pth` file may import anything) and lists the
modules that importing the CLI and compiling added to `sys.modules`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TYPICAL = ROOT / "bench" / "kernels" / "typical200.mettle"

PROBE = """
import sys
before = set(sys.modules)
from toolchain.compiler import cli
status = cli.main(sys.argv[1:])
new = sorted(set(sys.modules) - before)
import json
print(json.dumps({"status": status, "new": new}))
"""

# Other targets, the linker, host runtime providers, `mettle explain`'s table.
NOT_FOR_PTX = ("toolchain.compiler.targets.spirv", "toolchain.compiler.targets.x86_64",
               "toolchain.compiler.targets.arm64", "toolchain.compiler.targets.common",
               "toolchain.linker", "toolchain.providers", "toolchain.compiler.diagnostic_codes")
OPTIMIZER = "toolchain.compiler.opt"
# Standard-library modules that cost start-up time and that a compile does not need.
SLOW_STDLIB = ("dataclasses", "inspect", "typing", "pathlib", "platform", "importlib",
               "subprocess", "tempfile", "shutil", "hashlib", "json", "ast", "certifi")


def compile_imports(tmp_path: Path, *flags: str, source: Path = TYPICAL) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, *flags, str(source), "-o",
                           str(tmp_path / "out.ptx")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["status"] == 0, proc.stderr
    return report["new"]


def under(modules: list[str], prefixes) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_emit_ptx_loads_neither_other_targets_nor_the_optimizer(tmp_path):
    mods = compile_imports(tmp_path, "--emit-ptx", "--gpu-arch=sm_90a")
    assert "toolchain.compiler.targets.ptx.emitter" in mods     # the probe does see imports
    assert under(mods, NOT_FOR_PTX) == []
    assert under(mods, (OPTIMIZER,)) == []
    assert under(mods, SLOW_STDLIB) == []
    # the PTX text reader is for .ptx files; compiling never parses PTX
    assert "toolchain.compiler.targets.ptx.parse" not in mods


def test_the_optimizer_loads_with_O_only(tmp_path):
    mods = compile_imports(tmp_path, "--emit-ptx", "--gpu-arch=sm_90a", "-O")
    assert "toolchain.compiler.opt.manager" in mods
    assert under(mods, NOT_FOR_PTX) == []


def test_an_unroll_directive_loads_the_optimizer_without_O(tmp_path):
    src = tmp_path / "k.mettle"
    src.write_text("kernel k(a: float32*) {\n  @unroll(2) for i in 0..4 { a[i] = 1.0; }\n}\n")
    mods = compile_imports(tmp_path, "--emit-ptx", "--gpu-arch=sm_90a", source=src)
    assert "toolchain.compiler.opt.manager" in mods
