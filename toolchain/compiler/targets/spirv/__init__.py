"""Mettle toolchain package."""
