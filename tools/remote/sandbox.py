"""The execution half of the test worker (tools/remote/worker.py), free of gRPC and protobuf so
that it is unit-tested with the plain test interpreter.

Invariants: an action runs in a fresh directory holding only its input root, with exactly the
environment it declares (nothing inherited from the worker: no PATH, HOME or locale unless
the action names them), no standard input, and its own process group so that a timeout kills
everything it started. Every path an action names (working directory, outputs) stays inside
that directory: an absolute path or a `..` component is refused, never followed.
"""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath


class ActionError(Exception):
    """The action asked for something the worker refuses (e.g. a path outside its root)."""


@dataclass
class Ran:
    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False


@dataclass
class Tree:
    """A scanned output directory: files as (path on disk, executable), links as targets."""
    files: dict = field(default_factory=dict)
    dirs: dict = field(default_factory=dict)
    symlinks: dict = field(default_factory=dict)


@dataclass
class Output:
    """One declared output path as found after the run: kind is file, dir, symlink or missing."""
    path: str
    kind: str
    disk: Path | None = None
    executable: bool = False
    tree: Tree | None = None
    target: str = ""


def inside(root: Path, relative: str) -> Path:
    """`root / relative`, refusing absolute paths and `..` (an action's paths are relative)."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts:
        raise ActionError(f"path {relative!r} leaves the action's directory")
    return root.joinpath(*pure.parts) if pure.parts else root


def run(argv: list, env: dict, cwd: Path, timeout_s: float | None) -> Ran:
    """Runs argv in cwd with exactly `env`; a relative argv[0] resolves against cwd."""
    if not argv:
        raise ActionError("the command has no arguments")
    program = argv[0]
    if "/" in program and not program.startswith("/"):
        program = str(cwd / program)
    try:
        proc = subprocess.Popen([program, *argv[1:]], cwd=cwd, env=dict(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return Ran(127, b"", f"worker: cannot start {argv[0]!r}: {e.strerror}\n".encode())
    try:
        out, err = proc.communicate(timeout=timeout_s)
        return Ran(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        note = f"worker: killed after the action's timeout of {timeout_s:g} s\n".encode()
        return Ran(-signal.SIGKILL, out, err + note, timed_out=True)


def scan_tree(directory: Path) -> Tree:
    tree = Tree()
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        path = Path(entry.path)
        if entry.is_symlink():
            tree.symlinks[entry.name] = os.readlink(path)
        elif entry.is_dir():
            tree.dirs[entry.name] = scan_tree(path)
        elif entry.is_file():
            tree.files[entry.name] = (path, os.access(path, os.X_OK))
    return tree


def scan_output(cwd: Path, relative: str) -> Output:
    path = inside(cwd, relative)
    if path.is_symlink():
        return Output(relative, "symlink", disk=path, target=os.readlink(path))
    if path.is_dir():
        return Output(relative, "dir", disk=path, tree=scan_tree(path))
    if path.is_file():
        return Output(relative, "file", disk=path, executable=os.access(path, os.X_OK))
    return Output(relative, "missing")


def prepare_outputs(cwd: Path, paths) -> None:
    """Creates the parent directory of every declared output, as REAPI requires of a worker."""
    for relative in paths:
        inside(cwd, relative).parent.mkdir(parents=True, exist_ok=True)
