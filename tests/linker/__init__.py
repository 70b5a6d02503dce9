"""Tests of the ELF writer/reader and our linker."""
