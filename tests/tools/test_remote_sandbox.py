"""The test worker's execution half (tools/remote/sandbox.py): an action sees exactly its
declared environment and its own directory, times out as a process group, and its outputs
are scanned as files, directories and symlinks; paths leaving the directory are refused."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tools.remote.sandbox import (ActionError, Jail, inside, jail_available, prepare_outputs,
                                  run, scan_output)


def test_the_action_sees_only_its_declared_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKER_SECRET", "leak")
    ran = run(["/usr/bin/env"], {"A": "1", "LC_ALL": "C"}, tmp_path, 30)
    assert ran.exit_code == 0
    assert sorted(ran.stdout.decode().splitlines()) == ["A=1", "LC_ALL=C"]


def test_a_relative_program_runs_from_the_working_directory(tmp_path):
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho \"in $(pwd)\"; echo err >&2; exit 3\n")
    script.chmod(0o755)
    ran = run(["./tool.sh"], {}, tmp_path, 30)
    assert (ran.exit_code, ran.stdout, ran.stderr) == (3, f"in {tmp_path}\n".encode(), b"err\n")


def test_a_bare_program_name_uses_the_declared_path_only(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "only-here").write_text("#!/bin/sh\necho found\n")
    (bindir / "only-here").chmod(0o755)
    assert run(["only-here"], {"PATH": str(bindir)}, tmp_path, 30).stdout == b"found\n"
    missing = run(["only-here"], {}, tmp_path, 30)
    assert missing.exit_code == 127 and b"cannot start 'only-here'" in missing.stderr


def test_a_timeout_kills_the_whole_process_group(tmp_path):
    start = time.monotonic()
    # The child outlives its shell unless the worker kills the group.
    ran = run(["/bin/sh", "-c", "sleep 30 & sleep 30"], {}, tmp_path, 1)
    assert ran.timed_out and ran.exit_code != 0
    assert b"killed after the action's timeout of 1 s" in ran.stderr
    assert time.monotonic() - start < 20


def test_outputs_are_scanned_by_kind(tmp_path):
    prepare_outputs(tmp_path, ["out/file.txt", "out/dir", "link"])
    assert (tmp_path / "out").is_dir()
    (tmp_path / "out" / "file.txt").write_text("x")
    (tmp_path / "out" / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "out" / "dir" / "sub" / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "out" / "dir" / "sub" / "tool").chmod(0o755)
    os.symlink("sub/tool", tmp_path / "out" / "dir" / "alias")
    os.symlink("out/file.txt", tmp_path / "link")

    f = scan_output(tmp_path, "out/file.txt")
    assert (f.kind, f.executable) == ("file", False)
    d = scan_output(tmp_path, "out/dir")
    assert d.kind == "dir" and d.tree.symlinks == {"alias": "sub/tool"}
    assert d.tree.dirs["sub"].files["tool"][1] is True
    link = scan_output(tmp_path, "link")
    assert (link.kind, link.target) == ("symlink", "out/file.txt")
    assert scan_output(tmp_path, "never-written").kind == "missing"


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside", "a/../../b"])
def test_paths_outside_the_action_directory_are_refused(tmp_path, bad):
    with pytest.raises(ActionError, match="leaves the action's directory"):
        inside(tmp_path, bad)
    with pytest.raises(ActionError):
        scan_output(tmp_path, bad)


def test_an_empty_command_is_refused(tmp_path):
    with pytest.raises(ActionError, match="no arguments"):
        run([], {}, tmp_path, 1)


jail_missing = pytest.mark.skipif(
    jail_available() is not None,
    reason=f"bubblewrap cannot isolate here: {jail_available()}")


@pytest.fixture
def reachable(tmp_path_factory):
    """An action directory the jail's user can reach (pytest's own is root-only)."""
    import tempfile
    path = Path(tempfile.mkdtemp(prefix="mettle-jail-test-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@jail_missing
def test_a_jailed_action_is_unprivileged_and_sees_only_its_directory(reachable):
    jail = Jail()
    jail.give(reachable)
    script = ("id -u; id -g; test -e /root && echo ROOT-VISIBLE; test -e /work && echo "
              "WORK-VISIBLE; ls /; echo made > mine.txt; touch /usr/x 2>/dev/null && echo "
              "USR-WRITABLE; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    ran = run(["/bin/sh", "-c", script], {"PATH": "/usr/bin:/bin"}, reachable, 30, jail=jail)
    assert ran.exit_code == 0, ran.stderr
    lines = ran.stdout.decode().split()
    if os.geteuid() == 0:
        assert lines[:2] == ["65534", "65534"]
    assert "ROOT-VISIBLE" not in lines and "WORK-VISIBLE" not in lines
    assert "USR-WRITABLE" not in lines
    assert lines[-1] == "lo"  # its own network namespace: loopback only
    assert (reachable / "mine.txt").read_text() == "made\n"


LEFT_BEHIND = ("sleep {n} >/dev/null 2>&1 & sleep 0.3; "
               "pgrep -f 'sleep {n}' >/dev/null && echo running")


def _still_running(n: str) -> str:
    return subprocess.run(["pgrep", "-f", f"sleep {n}"], capture_output=True,
                          text=True).stdout


@jail_missing
def test_a_process_left_behind_by_a_jailed_action_is_killed(reachable):
    jail = Jail()
    jail.give(reachable)
    n = f"31{os.getpid() % 1000}.5"
    ran = run(["/bin/sh", "-c", LEFT_BEHIND.format(n=n)], {"PATH": "/usr/bin:/bin"},
              reachable, 30, jail=jail)
    assert ran.exit_code == 0 and ran.stdout == b"running\n", ran
    time.sleep(0.5)
    assert _still_running(n) == ""


def test_a_process_left_behind_in_the_process_group_is_killed(tmp_path):
    n = f"32{os.getpid() % 1000}.5"
    ran = run(["/bin/sh", "-c", LEFT_BEHIND.format(n=n)], {"PATH": "/usr/bin:/bin"},
              tmp_path, 30)
    assert ran.exit_code == 0 and ran.stdout == b"running\n", ran
    time.sleep(0.5)
    assert _still_running(n) == ""
