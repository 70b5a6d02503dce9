"""Enter the trixie root (tools/bootstrap/30-opencl-runtime.sh) to run code on its OpenCL
runtime (PoCL 6): tests (tests/support/opencl.py), tools/difftest and the runtime's OpenCL
checks share this; tools never import the test suite.

Route: the root is `.bootstrap/trixie/` of $METTLE_REPO_ROOT (when set) or of this checkout.
`run_in_root` enters it as root with `unshare --mount` (a private mount namespace, so nothing
is mounted on the host), mounts /proc, /sys and /dev (PoCL's hwloc needs the CPU topology),
bind-mounts THIS checkout read-only at /mnt/repo (the code under test, even when the root is
borrowed from another checkout) and runs the command there. `opencl_available()` says
whether that works, with a reason, for clean skips. The environment passes through:
METTLE_OPENCL_PLATFORM=rusticl (plus RUSTICL_ENABLE=llvmpipe) selects Mesa's rusticl when
the root has it; the default is the first SPIR-V device (PoCL).
"""
from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
_ROOT_REL = Path(".bootstrap/trixie")
_STAMP = ".mettle-opencl-stamp"


def repo_roots() -> list[Path]:
    """Candidate repository roots: $METTLE_REPO_ROOT first, then this checkout."""
    roots = []
    if os.environ.get("METTLE_REPO_ROOT"):
        roots.append(Path(os.environ["METTLE_REPO_ROOT"]))
    roots.append(CHECKOUT)
    return roots


def trixie_root() -> Path | None:
    for root in repo_roots():
        if (root / _ROOT_REL / _STAMP).is_file():
            return root / _ROOT_REL
    return None


def _chroot_command(root: Path, repo: Path, inner: str) -> list[str]:
    mounts = (f"mount -t proc proc {root}/proc && mount --rbind /sys {root}/sys && "
              f"mount --rbind /dev {root}/dev && mount --bind {repo} {root}/mnt/repo && "
              f"mount -o remount,bind,ro {root}/mnt/repo")
    chrooted = shlex.quote(f"cd /mnt/repo && PYTHONDONTWRITEBYTECODE=1 {inner}")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f"{mounts} && exec chroot {root} sh -c {chrooted}"]


def run_in_root(inner: str, timeout: float = 300) -> subprocess.CompletedProcess:
    root = trixie_root()
    if root is None:
        raise RuntimeError("the trixie root is not bootstrapped")
    return subprocess.run(_chroot_command(root, CHECKOUT, inner), capture_output=True,
                          text=True, timeout=timeout)


@functools.lru_cache(maxsize=None)
def opencl_available() -> tuple[bool, str]:
    """(True, device JSON) when a SPIR-V OpenCL device runs in the root, else (False, why)."""
    if trixie_root() is None:
        return False, "no trixie root: run tools/bootstrap/30-opencl-runtime.sh (as root)"
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False, "entering the trixie root needs root and unshare"
    proc = run_in_root("python3 -m toolchain.providers.opencl.run_spirv --info", timeout=120)
    if proc.returncode != 0:
        return False, f"OpenCL probe failed: {proc.stderr.strip()[-400:]}"
    devices = json.loads(proc.stdout)
    if not any("SPIR-V" in d["il_version"] for d in devices):
        return False, f"no device reports SPIR-V in CL_DEVICE_IL_VERSION: {proc.stdout}"
    return True, proc.stdout
