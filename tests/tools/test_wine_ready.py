"""tools/wine.py: after `ready()`, a Windows program run under Wine with captured output
owns its pipes alone. Wine's system processes (services.exe, winedevice.exe...) hold none
of them, so the caller's read ends when the program exits, and nothing they print on their
way out reaches the program's stderr."""
from __future__ import annotations

import os
import subprocess

from tests.host.cross import build_for, command, skip_unless_runnable, wine
from tools import wine as wine_processes

PROGRAM = 'import "std/io";\nfn main() -> int32 { print_int(7); newline(); return 0; }\n'


def _holders(inode: int) -> list[str]:
    """The command lines of the processes, other than this one, holding pipe `inode`."""
    link, found = f"pipe:[{inode}]", []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == link for fd in fds):
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    found.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:                  # gone meanwhile, or not ours to read
            continue
    return found


def test_after_ready_a_programs_pipes_are_its_own(tmp_path):
    skip_unless_runnable("x86_64-windows")
    exe = build_for(tmp_path, PROGRAM, "x86_64-windows")
    wine_processes.ready(wine())
    env = dict(os.environ, WINEDEBUG="-all")
    with subprocess.Popen(command("x86_64-windows", exe), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env) as p:
        assert p.wait(timeout=120) == 0
        inodes = [os.fstat(s.fileno()).st_ino for s in (p.stdout, p.stderr)]
        held = {i: _holders(i) for i in inodes}
        out = p.stdout.read().decode().replace("\r\n", "\n")
    assert held == {i: [] for i in inodes}, held
    assert out == "7\n"
