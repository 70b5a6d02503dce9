"""The execution half of the test worker (tools/remote/worker.py), free of gRPC and protobuf so
that it is unit-tested with the plain test interpreter.

Invariants: an action runs in a fresh directory holding only its input root, with exactly the
environment it declares (nothing inherited from the worker: no PATH, HOME or locale unless
the action names them), no standard input, and its own process group so that a timeout kills
everything it started. Every path an action names (working directory, outputs) stays inside
that directory: an absolute path or a `..` component is refused, never followed.

With a `Jail` (the worker's default), the action also runs under bubblewrap as an
unprivileged user in its own user, mount, PID, network, IPC and UTS namespaces: it sees its
own directory (read-write), the declared tool paths (read-only), a private /tmp, /proc and
/dev, and the worker's append-only caches, and nothing else of the host; it has no network.
When its first process exits, the PID namespace ends and the kernel kills whatever it left
behind. Why bubblewrap rather than unshare(1): one unprivileged call sets up every namespace
and every mount from a declarative argument list (no root needed, no mount script run inside
the sandbox), it maps the caller to an unprivileged uid, drops all capabilities, and
--die-with-parent ties the sandbox's life to the worker's.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
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


# What an isolated action sees of the host, read-only, unless the worker names other paths:
# the system's programs and libraries (Debian keeps /bin, /lib, ... as links into /usr).
DEFAULT_TOOL_PATHS = ("/usr", "/etc/alternatives", "/etc/ssl/certs", "/etc/ld.so.cache")
# The unprivileged identity of an isolated action (nobody/nogroup).
NOBODY = 65534
# Where bwrap and setpriv are looked for when PATH lacks them (a test runner's bare PATH).
SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


def system_tool(name: str) -> str:
    """The absolute path of a system tool, else its bare name (which then fails to start)."""
    return shutil.which(name) or shutil.which(name, path=SYSTEM_PATH) or name


@dataclass
class Jail:
    """How an action is isolated (module docstring): the read-only tool paths it may see,
    extra read-write binds {host path: path inside}, and the uid/gid it runs as when the
    worker itself is root (a non-root worker's own uid is already unprivileged)."""
    tool_paths: tuple = DEFAULT_TOOL_PATHS
    binds: dict = field(default_factory=dict)
    uid: int = NOBODY
    gid: int = NOBODY
    bwrap: str = field(default_factory=lambda: system_tool("bwrap"))
    # The host's network, for pools whose actions download packages (Pants' PEX builds
    # resolve from the package index); every other namespace stays private.
    share_network: bool = False

    def wrap(self, argv: list, cwd: Path) -> list:
        args = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        if self.share_network:
            args += ["--share-net", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf",
                     "--ro-bind-try", "/etc/hosts", "/etc/hosts"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
        for path in self.tool_paths:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        for host, inner in sorted(self.binds.items()):
            args += ["--bind", str(host), str(inner)]
        return args + ["--bind", str(cwd), str(cwd), "--chdir", str(cwd), "--", *argv]

    def command(self, argv: list, cwd: Path) -> list:
        """The full command line: a root worker drops to the jail's user with setpriv first
        (not Popen's user=, which makes Python fork where it would vfork, and gRPC's fork
        handlers then crash the child of a multi-threaded worker)."""
        wrapped = self.wrap(argv, cwd)
        if os.geteuid() != 0:
            return wrapped
        return [system_tool("setpriv"), f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                "--", *wrapped]

    def give(self, root: Path) -> None:
        """Hands the action's directory to the jail's user (a root worker's sandboxes)."""
        if os.geteuid() != 0:
            return
        for dirpath, dirnames, filenames in os.walk(root):
            os.lchown(dirpath, self.uid, self.gid)
            for name in dirnames + filenames:
                os.lchown(os.path.join(dirpath, name), self.uid, self.gid)


def jail_available(jail: Jail | None = None) -> str | None:
    """None when bubblewrap can build this jail here (as its user), else why not."""
    jail = jail or Jail()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        try:
            probe = subprocess.run(jail.command(["/usr/bin/true"], Path(tmp)), cwd=tmp,
                                   capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"cannot run {jail.bwrap}: {e}"
    if probe.returncode:
        return f"{jail.bwrap} cannot create namespaces here: {probe.stderr.decode().strip()}"
    return None


def run(argv: list, env: dict, cwd: Path, timeout_s: float | None, jail: Jail | None = None,
        started=None) -> Ran:
    """Runs argv in cwd with exactly `env`; a relative argv[0] resolves against cwd. With a
    jail, inside bubblewrap as its user. `started(proc)` is told the process (so the worker can
    kill an action whose lease it lost)."""
    if not argv:
        raise ActionError("the command has no arguments")
    program = argv[0]
    if "/" in program and not program.startswith("/"):
        program = str(cwd / program)
    command = [program, *argv[1:]]
    if jail is not None:
        command = jail.command(command, cwd)
    try:
        proc = subprocess.Popen(command, cwd=cwd, env=dict(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return Ran(127, b"", f"worker: cannot start {argv[0]!r}: {e.strerror}\n".encode())
    if started is not None:
        started(proc)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        kill(proc)  # whatever the action left running in its process group goes with it
        return Ran(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        kill(proc)
        out, err = proc.communicate()
        note = f"worker: killed after the action's timeout of {timeout_s:g} s\n".encode()
        return Ran(-signal.SIGKILL, out, err + note, timed_out=True)


def kill(proc: subprocess.Popen) -> None:
    """Kills an action's whole process group (in a jail, its PID namespace goes with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
