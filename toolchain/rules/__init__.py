"""The Mettle Pants plugin (see README.md); loaded by Pants, not part of the compiler."""
