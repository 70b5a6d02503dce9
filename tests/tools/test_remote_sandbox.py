"""The test worker's execution half (tools/remote/sandbox.py): an action sees exactly its
declared environment and its own directory, times out as a process group, and its outputs
are scanned as files, directories and symlinks; paths leaving the directory are refused."""
from __future__ import annotations

import os
import time

import pytest

from tools.remote.sandbox import ActionError, inside, prepare_outputs, run, scan_output


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
