"""Runs the real `./pants` in temporary clones of this repository: shared by the build-rule
tests (tests/rules/) and the remote demonstrations (tools/remote/cache_demo.py, exec_demo.py).

Invariants: a clone gets its own buildroot (so an outer `./pants test` never shares a lock,
pantsd or workdir with it) and borrows only the already-bootstrapped tools of the source
checkout (.bootstrap/ entries as symlinks inside a real .bootstrap/ directory, which Pants
ignores). Runs are `--no-pantsd`, so anything reused between runs came from the persistent
caches, never from a daemon's memory. Locally executed processes are read from the debug
log's `spawned local process ... description: "..."` lines, one per action actually run.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# Files the build-rule work is developed in; a clone takes them from the working tree so an
# uncommitted change is tested too (everything else is the committed HEAD).
OVERLAY = ("toolchain/rules", "app/BUILD", "pants.toml", "tests/rules", "tools/remote", "BUILD",
           "tests/gpu/BUILD")
_SPAWNED_RE = re.compile(r'spawned local process as .*? description: "([^"]*)"')
_CANCELED_RE = re.compile(r"\[INFO\] Canceled: (.*)$", re.M)
PANTS_TIMEOUT_S = 900


def source_root() -> Path:
    """The checkout the clones come from: $METTLE_REPO_ROOT under Pants, else this tree."""
    env = os.environ.get("METTLE_REPO_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def has_bootstrapped_pants(root: Path) -> bool:
    return (root / ".bootstrap" / "pants-2.17.1" / ".stamp").is_file()


def make_clone(root: Path, dest: Path, like: Path | None = None) -> Path:
    """A fresh `git clone` of `root` at `dest` plus the overlay and the borrowed .bootstrap.
    With `like` (an earlier clone), the same commit and overlay as that clone: others commit
    to `root` while a test runs, and two checkouts meant to be equal must not differ."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(root), str(dest)], check=True)
    if like is not None:
        rev = subprocess.run(["git", "-C", str(like), "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        subprocess.run(["git", "-C", str(dest), "checkout", "-q", rev], check=True)
    for rel in OVERLAY:
        src, dst = (like or root) / rel, dest / rel
        if src.is_dir():
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, dst)
    boot = dest / ".bootstrap"
    boot.mkdir()
    for entry in (root / ".bootstrap").iterdir():
        (boot / entry.name).symlink_to(entry)
    return dest


@dataclass
class PantsRun:
    returncode: int
    log: str
    seconds: float

    def spawned(self, prefix=("",)) -> list:
        """Descriptions of the processes this run executed locally (not cache hits) that
        start with `prefix` (a string or a tuple of strings). Pants may start an action
        locally while it still looks it up in the remote cache and cancel it when the hit
        arrives (under load the lookup outlasts its speculation delay): a spawn whose
        workunit was then canceled produced nothing and is not counted."""
        canceled = set(_CANCELED_RE.findall(self.log))
        return [d for d in _SPAWNED_RE.findall(self.log)
                if d.startswith(prefix) and d not in canceled]


def run_pants(clone: Path, *args: str, env: dict | None = None) -> PantsRun:
    """`./pants --no-pantsd --no-dynamic-ui -ldebug ARGS` in `clone`; never raises on rc."""
    start = time.monotonic()
    proc = subprocess.run(_pants_argv(args), cwd=clone, env=_pants_env(env),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=PANTS_TIMEOUT_S)
    return PantsRun(proc.returncode, proc.stdout, time.monotonic() - start)


def run_pants_watching(clone: Path, *args: str, log: Path, env: dict | None = None,
                       when=None, then=None) -> PantsRun:
    """run_pants with the output going to `log` as it is written: once a line satisfies
    `when(line)` (asked at least once a second, with "" when nothing new came), `then()` is
    called (once) while Pants keeps running."""
    start = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(_pants_argv(args), cwd=clone, env=_pants_env(env),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    reader, partial = open(log, errors="replace"), ""
    try:
        while proc.poll() is None:
            if time.monotonic() - start > PANTS_TIMEOUT_S:
                raise subprocess.TimeoutExpired(proc.args, PANTS_TIMEOUT_S)
            if then is not None:
                *lines, partial = (partial + reader.read()).split("\n")
                # The empty line lets a time-based `when` fire while Pants prints nothing.
                if any(when(ln) for ln in [*lines, ""]):
                    then()
                    then = None
            time.sleep(1)
    finally:
        reader.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return PantsRun(proc.returncode, log.read_text(errors="replace"), time.monotonic() - start)


def _pants_argv(args) -> list:
    return ["./pants", "--no-pantsd", "--no-dynamic-ui", "-ldebug", "--no-watch-filesystem",
            *args]


def _pants_env(env: dict | None) -> dict:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PANTS_")}
    full_env.update(env or {})
    return full_env


def tail(run: PantsRun, lines: int = 40) -> str:
    """The end of a run's log, minus debug noise, for assertion messages."""
    kept = [ln for ln in run.log.splitlines() if "[DEBUG]" not in ln]
    return "\n".join(kept[-lines:])
