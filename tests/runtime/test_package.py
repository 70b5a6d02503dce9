"""`import mettle` in a checkout: the same module objects as `toolchain`, `python -m
mettle.compiler` works, and the runtime's names are exported lazily."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args, "-c", code] if code else
                          [sys.executable, *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, cwd="/")


def test_mettle_is_the_toolchain_package_under_one_identity():
    proc = run("import mettle, toolchain\n"
               "import mettle.compiler.driver as a, toolchain.compiler.driver as b\n"
               "from mettle.runtime.errors import LaunchError\n"
               "import toolchain.runtime.errors as e\n"
               "print(mettle is toolchain, a is b, LaunchError is e.LaunchError,\n"
               "      mettle.LaunchError is LaunchError)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"] * 4


def test_the_command_runs_as_a_module_of_mettle():
    proc = run("", "-m", "mettle.compiler", "--version")
    assert (proc.returncode, proc.stdout) == (0, "mettle 0.1.0\n"), proc.stderr


def test_importing_mettle_loads_no_runtime_until_a_name_is_used():
    proc = run("import sys, mettle\n"
               "before = any(m.startswith('toolchain.runtime') for m in sys.modules)\n"
               "mettle.compile\n"
               "print(before, 'toolchain.runtime.compiler' in sys.modules)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_unknown_names_are_attribute_errors():
    proc = run("import mettle\n"
               "try:\n    mettle.launch\nexcept AttributeError as e:\n    print(e)\n")
    assert proc.stdout.strip() == "module 'mettle' has no attribute 'launch'"
