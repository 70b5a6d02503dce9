"""Entry point of the tool PEXes the Mettle rules build (ptxas; the variant profiler/selector).

usage: mettle_pex_launcher ptxas ARGS...       exec the pinned wheel's ptxas
       mettle_pex_launcher module NAME ARGS... run module NAME as __main__

Invariants: ptxas is found only inside the PEX's own nvidia-cuda-nvcc distribution (never
PATH or /usr/local/cuda), and `module` exports it as $METTLE_PTXAS so tools/gpu/*.py use
that same binary. The rules copy this file into each PEX as the top-level module
`mettle_pex_launcher`; it imports nothing from the repository.
"""
from __future__ import annotations

import importlib.metadata
import os
import runpy
import stat
import sys
from pathlib import Path

WHEEL = "nvidia-cuda-nvcc"


def wheel_ptxas() -> str | None:
    """The ptxas file of the installed nvidia-cuda-nvcc distribution, made executable."""
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if f.name == "ptxas" and f.parent.name == "bin":
            path = Path(dist.locate_file(f))
            if path.is_file():
                mode = path.stat().st_mode
                if not mode & stat.S_IXUSR:  # some installers drop the wheel's exec bit
                    path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
                return str(path)
    return None


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("ptxas", "module") or (args[0] == "module" and len(args) < 2):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    ptxas = wheel_ptxas()
    if args[0] == "ptxas":
        if ptxas is None:
            print(f"mettle_pex_launcher: {WHEEL} is not in this PEX", file=sys.stderr)
            return 2
        os.execv(ptxas, [ptxas, *args[1:]])
    if ptxas is not None:
        os.environ["METTLE_PTXAS"] = ptxas
    sys.argv = [args[1], *args[2:]]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
