"""Build host programs for every host target and run them where this machine can:
x86-64 Linux natively, AArch64 Linux under qemu-aarch64 (Debian's qemu-user, with the
arm64 C library of libc6-arm64-cross under /usr/aarch64-linux-gnu, see
tools/bootstrap/50-host-cross.sh), Windows x64 under Wine when it runs here.

    exe = build_for(tmp_path, source, "aarch64-linux")
    out = run_on("aarch64-linux", exe, args=[...], env_extra={...})
    skip_unless_runnable("aarch64-linux")      # pytest.skip with the reason
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import wine as wine_processes

from .support import REPO, compile_cmd

TARGETS = ("x86_64-linux", "aarch64-linux", "x86_64-windows")
AARCH64_SYSROOT = os.environ.get("METTLE_AARCH64_SYSROOT", "/usr/aarch64-linux-gnu")


def qemu_aarch64() -> str | None:
    return shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")


def wine() -> str | None:
    """Debian's wine64 package puts the loader at /usr/lib/wine/wine64 (no PATH entry)."""
    found = shutil.which("wine64") or shutil.which("wine")
    if found is None and os.access("/usr/lib/wine/wine64", os.X_OK):
        found = "/usr/lib/wine/wine64"
    return found


def why_not_runnable(target: str) -> str | None:
    """None when programs for `target` can run here, else the reason they cannot."""
    if target == "x86_64-linux":
        return None
    if target == "aarch64-linux":
        if qemu_aarch64() is None:
            return "qemu-aarch64 is missing (tools/bootstrap/50-host-cross.sh installs it)"
        if not Path(AARCH64_SYSROOT, "lib", "ld-linux-aarch64.so.1").exists():
            return f"no arm64 C library under {AARCH64_SYSROOT} (libc6-arm64-cross)"
        return None
    if target == "x86_64-windows":
        return None if wine() else "wine is missing"
    return f"unknown target {target}"


def skip_unless_runnable(target: str) -> None:
    reason = why_not_runnable(target)
    if reason:
        pytest.skip(reason)


def build_for(tmp_path: Path, source: str, target: str, name: str = "prog",
              extra=()) -> Path:
    """Compile `source` with `mettle --build --target=TARGET`; fail the test on errors."""
    src = tmp_path / f"{name}.mettle"
    src.write_text(source)
    suffix = ".exe" if target.endswith("windows") else ""
    exe = tmp_path / f"{name}-{target}{suffix}"
    r = subprocess.run(compile_cmd("--build", str(src), "-o", str(exe), f"--target={target}",
                                   *extra), cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, f"compile for {target} failed:\n{r.stdout}{r.stderr}"
    return exe


def command(target: str, exe: Path, args=()) -> list[str]:
    if target == "aarch64-linux":
        return [qemu_aarch64(), "-L", AARCH64_SYSROOT, str(exe), *map(str, args)]
    if target == "x86_64-windows":
        return [wine(), str(exe), *map(str, args)]
    return [str(exe), *map(str, args)]


def run_on(target: str, exe: Path, args=(), env_extra=None, cwd=None,
           timeout=120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(env_extra or {})
    if target == "x86_64-windows":
        env.setdefault("WINEDEBUG", "-all")
        wine_processes.ready(wine())
    return subprocess.run(command(target, exe, args), capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def normalized_driver_log(log: str) -> str:
    """Pointers -> P0, P1... by first appearance (0x0 stays); a pointer's little-endian
    bytes inside a launch's parameter cells -> the same name."""
    names: dict[str, str] = {}

    def name(m: re.Match) -> str:
        v = int(m.group(0), 16)
        if v == 0:
            return "0x0"
        return names.setdefault(m.group(0), f"P{len(names)}")

    text = re.sub(r"0x[0-9a-f]+", name, log)
    for hexval, n in names.items():
        text = text.replace(int(hexval, 16).to_bytes(8, "little").hex(), n)
    return text


def check_program(tmp_path: Path, src_path: Path, target: str, opt: str) -> None:
    """Build `src_path` for `target` (`opt` is "-O0" or "-O"), run it and compare its stdout
    with the `.out` file beside it (exit status 0)."""
    skip_unless_runnable(target)
    exe = build_for(tmp_path, src_path.read_text(), target, src_path.stem,
                    extra=() if opt == "-O0" else ("-O",))
    r = run_on(target, exe)
    assert (r.returncode, r.stdout.replace("\r\n", "\n")) == \
        (0, src_path.with_suffix(".out").read_text()), \
        f"{target} {opt}: exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
