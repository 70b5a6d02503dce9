"""A fresh clone needs no command before the README's: `./pants` sets itself up.

A clean `git clone` of the checkout (committed HEAD, no `.bootstrap/`) runs
`./pants package //app:host`: the launcher must run the setup steps of tools/bootstrap/ with
visible progress (Pants itself, spirv-tools), build the app, and on the next start skip the
setup entirely. A `test` goal in the same clone then runs the test-only steps too.

To stay within a few minutes, what is shared is only what is slow and not under test: pip's
download cache (.bootstrap/cache/pip of the source checkout) and Pants' own caches under
HOME; the two test-only artifacts that take minutes and hundreds of MB (the trixie OpenCL
root, BuildGrid) are lent as symlinks from the source checkout when it has them, so their
steps find their stamps and settle at once, exactly as on a second run.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TIMEOUT_S = 900


def source_root() -> Path:
    env = os.environ.get("METTLE_REPO_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[2]


ROOT = source_root()
pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                                reason="needs git and a git checkout to clone")


def ran_step(log: str, name: str) -> bool:
    """Whether the launcher announced setup step `name` (`pants: setup [i/n] name`)."""
    return re.search(rf"^pants: setup \[\d+/\d+\] {re.escape(name)} \(first use", log,
                     re.M) is not None


def run(cmd: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("fresh") / "checkout"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)], check=True)
    assert not (dest / ".bootstrap").exists()
    return dest


@pytest.fixture(scope="module")
def env() -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PANTS_", "METTLE_"))}
    cache = ROOT / ".bootstrap" / "cache" / "pip"
    cache.mkdir(parents=True, exist_ok=True)
    out["PIP_CACHE_DIR"] = str(cache)
    return out


@pytest.fixture(scope="module")
def packaged(clone, env) -> subprocess.CompletedProcess:
    return run(["./pants", "--no-pantsd", "--no-dynamic-ui", "package", "//app:host"],
               clone, env)


def test_package_sets_up_on_first_use_and_builds_the_app(clone, packaged):
    log = packaged.stdout
    assert packaged.returncode == 0, log[-4000:]
    assert ran_step(log, "10-pants") and ran_step(log, "20-spirv-tools"), log[-4000:]
    # Test-only steps wait for a test goal.
    assert not ran_step(log, "30-opencl-runtime") and not ran_step(log, "40-buildgrid")
    host = clone / "dist" / "app" / "host"
    proc = subprocess.run([str(host)], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout.split(":")[0].strip()) in ((2, "no GPU"), (0, "vadd"))


def test_second_start_skips_setup(clone, env, packaged):
    assert packaged.returncode == 0
    again = run(["./pants", "--no-pantsd", "--version"], clone, env)
    assert again.returncode == 0, again.stdout[-4000:]
    assert "pants: setup" not in again.stdout


def test_test_goal_runs_the_test_only_steps(clone, env, packaged):
    assert packaged.returncode == 0
    boot = clone / ".bootstrap"
    for name in ("trixie", "buildgrid"):           # minutes and hundreds of MB: lent
        if (ROOT / ".bootstrap" / name).exists():
            (boot / name).symlink_to(ROOT / ".bootstrap" / name)
    proc = run(["./pants", "--no-pantsd", "--no-dynamic-ui", "test",
                "tests/test_smoke.py"], clone, env)
    log = proc.stdout
    assert proc.returncode == 0, log[-4000:]
    assert ran_step(log, "30-opencl-runtime") and ran_step(log, "40-buildgrid"), log[-4000:]
    assert not ran_step(log, "10-pants")
