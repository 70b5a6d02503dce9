"""The build-rule tests' view of tools/remote_cache/checkouts.py (clones + `./pants` runs)."""
from __future__ import annotations

from tools.remote_cache.checkouts import (PantsRun, has_bootstrapped_pants, make_clone,
                                          run_pants, source_root, tail)

__all__ = ["PantsRun", "has_bootstrapped_pants", "make_clone", "run_pants", "source_root",
           "tail"]
