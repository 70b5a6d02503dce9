"""The `mettle` command line run in-process: `mettle(*args)` returns what
`subprocess.run([sys.executable, "-m", "toolchain.compiler", *args], capture_output=True,
text=True)` would (args, returncode, stdout, stderr), without starting a process.

For tests that check what the CLI does, not how a process starts (tests/cli/ keeps real
processes for that). Importing this module makes a test depend, through Pants' dependency
inference, on exactly the compiler modules the CLI imports; backends chosen at run time by
name (SPIR-V, the host targets) are imported by the tests that use them.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess

from toolchain.compiler import cli


def mettle(*args, cwd=None) -> subprocess.CompletedProcess:
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(argv)
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["mettle", *argv], status, out.getvalue(),
                                       err.getvalue())
