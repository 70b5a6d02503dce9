"""Keeping Wine's own processes out of a Windows program's captured output.

The first Wine process of a fresh wineserver boots the prefix's system processes
(services.exe, winedevice.exe, explorer.exe, plugplay.exe), and they inherit its standard
handles. A caller that captures the program's output then reads until those processes let go
of the pipes too: when the server shuts them down, its persistence delay (3 s) after the
program exits. So every captured run took about 2.6 s instead of 0.06 s, and what the system
processes print on the way out lands in the program's stderr: Wine 8's winedevice.exe now and
then faults in ntoskrnl.exe at shutdown ("wine: Unhandled page fault on read access to
0000000000000008 ..."), which failed output comparisons at random under load.

`ready()` starts the server with a longer persistence and boots the prefix with its output
discarded, so a program started after it finds the system processes running and holding
nothing of its own. It is cheap when the server already runs (one `wineserver` exec).
"""
from __future__ import annotations

import os
import shutil
import subprocess

PERSIST_S = 120         # the server outlives its last program this long, then exits


def ready(wine: str = "wine") -> None:
    """Make sure a wineserver runs with the prefix booted away from the caller's pipes."""
    server = _wineserver(wine)
    if server is None:
        return
    started = subprocess.run([server, f"-p{PERSIST_S}"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if started.returncode != 0:          # 2: a server is already running, booted
        return
    try:
        subprocess.run([wine, "cmd.exe", "/c", "exit"], env=dict(os.environ, WINEDEBUG="-all"),
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)
    except subprocess.TimeoutExpired:    # the program's own run will say what is wrong
        pass


def _wineserver(wine: str) -> str | None:
    """The wineserver beside `wine` (Debian: /usr/lib/wine/wineserver64), else on PATH."""
    here = os.path.dirname(os.path.realpath(shutil.which(wine) or wine))
    for name in ("wineserver", "wineserver64"):
        path = os.path.join(here, name)
        if os.access(path, os.X_OK):
            return path
    return shutil.which("wineserver")
