"""No committed file names a package registry's host (project rule).

The host names are not written here either: they come at run time from pip's own defaults
and from this machine's apt sources. The lockfile refers to the index's file host as
${PACKAGE_FILES}, which ./pants maps back when Pants runs.
"""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

HERE = Path(__file__).resolve().parents[1]


def repo_root() -> Path:
    for cand in (os.environ.get("METTLE_REPO_ROOT"), str(HERE)):
        if cand and (Path(cand) / ".git").exists():
            return Path(cand)
    pytest.fail("no git checkout found (METTLE_REPO_ROOT or the source tree)")


def pip_index_hosts() -> set[str]:
    """pip's default index and file hosts, from any interpreter that has pip (the test
    sandbox's may not; Pants' own bootstrap interpreter does)."""
    code = ("from pip._internal.models.index import PyPI; "
            "print(PyPI.url); print(PyPI.file_storage_domain)")
    candidates = [sys.executable, *glob.glob(str(repo_root() / ".bootstrap/pants-*/bin/python"))]
    for exe in candidates:
        proc = subprocess.run([exe, "-c", code], capture_output=True, text=True)
        if proc.returncode == 0:
            url, files = proc.stdout.split()
            return {urlparse(url).netloc, files}
    pytest.fail(f"no interpreter with pip among {candidates}")


def registry_hosts() -> set[str]:
    hosts = pip_index_hosts()
    for path in glob.glob("/etc/apt/sources.list") + glob.glob("/etc/apt/sources.list.d/*"):
        text = Path(path).read_text(errors="replace")
        hosts |= {urlparse(u).netloc for u in re.findall(r"https?://[^\s\"']+", text)}
    return {h for h in hosts if h}


def test_no_committed_file_names_a_registry_host():
    root = repo_root()
    git = "/usr/bin/git" if Path("/usr/bin/git").exists() else "git"
    files = subprocess.run([git, "-C", str(root), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    hosts = registry_hosts()
    assert hosts, "could not learn any registry host to look for"
    found = []
    for rel in filter(None, files):
        path = root / rel
        if not path.is_file():
            continue
        data = path.read_bytes()
        found += [f"{rel}: {h}" for h in hosts if h.encode() in data]
    assert not found, "registry host names in committed files:\n" + "\n".join(found)


def test_the_lockfile_uses_the_path_mapping():
    lock = (repo_root() / "third_party" / "python-default.lock").read_text()
    assert '"url": "https:${PACKAGE_FILES}/' in lock
    assert '"PACKAGE_FILES"' in lock
