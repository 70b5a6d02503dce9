"""The build-rule tests' view of tools/remote/checkouts.py (clones + `./pants` runs)."""
from __future__ import annotations

from tools.remote.checkouts import (PantsRun, has_bootstrapped_pants, make_clone,
                                          run_pants, source_root, tail)

__all__ = ["PantsRun", "has_bootstrapped_pants", "make_clone", "run_pants", "source_root",
           "tail"]
