"""Helpers shared by the test suite (external tool wrappers, fixtures' back ends).

Nothing here is imported by the toolchain; tests may import it freely.
"""
