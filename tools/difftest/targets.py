"""Host targets the differential tester builds every program for.

The hook for new host targets (issue 15): one `HostTarget` entry per target, naming the CLI
flags that select it and the command prefix that runs its executables here. A target is
used when its runner exists and the compiler accepts its flags (probed once with a tiny
program), so the AArch64 (`--target=aarch64-linux` under qemu) and Windows
(`--target=x86_64-windows` under Wine) entries switch themselves on when those backends
land, with no change here.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from tools import wine

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class HostTarget:
    name: str
    cli_args: tuple[str, ...]       # compiler flags that select the target
    run_prefix: tuple[str, ...]     # how to run its executables on this machine
    exe_suffix: str = ""

    def run_command(self, exe: str) -> list[str]:
        """The command that runs `exe` here; under Wine, with its system processes started
        first so that they stay out of the program's output (tools/wine.py)."""
        if self.run_prefix[:1] == ("wine",):
            wine.ready(self.run_prefix[0])
        return [*self.run_prefix, exe]


TARGETS = [
    HostTarget("x86_64-linux", (), ()),
    HostTarget("aarch64-linux", ("--target=aarch64-linux",),
               ("qemu-aarch64", "-L", "/usr/aarch64-linux-gnu")),
    HostTarget("x86_64-windows", ("--target=x86_64-windows",), ("wine",), ".exe"),
]

PROBE = 'import "std/io";\nfn main() -> int32 { print_int(42); newline(); return 0; }\n'


@functools.lru_cache(maxsize=None)
def availability(target: HostTarget) -> tuple[bool, str]:
    """(True, "") when `target` builds and runs a probe program here, else (False, why)."""
    if target.run_prefix and shutil.which(target.run_prefix[0]) is None:
        return False, f"{target.run_prefix[0]} is not installed"
    with tempfile.TemporaryDirectory(prefix="difftest-probe-") as d:
        src, exe = os.path.join(d, "p.mettle"), os.path.join(d, "p" + target.exe_suffix)
        with open(src, "w") as f:
            f.write(PROBE)
        r = subprocess.run([sys.executable, "-m", "toolchain.compiler", "--build", src,
                            "-o", exe, *target.cli_args], cwd=REPO, capture_output=True,
                           text=True)
        if r.returncode != 0:
            return False, f"the compiler does not build for it yet: {r.stderr.strip()[:200]}"
        try:
            out = subprocess.run(target.run_command(exe), capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"cannot run its executables: {e}"
        if out.stdout.strip() != "42":
            return False, f"the probe printed {out.stdout!r} (rc {out.returncode})"
    return True, ""


def available_targets(names: list[str] | None = None) -> list[HostTarget]:
    wanted = [t for t in TARGETS if names is None or t.name in names]
    return [t for t in wanted if availability(t)[0]]
