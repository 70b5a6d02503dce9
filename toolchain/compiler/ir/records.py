"""Moved to toolchain/records.py (outside the layers, so diagnostics may use it too); this
name stays for existing imports."""
from ...records import dataclass, field  # noqa: F401

__all__ = ["dataclass", "field"]
