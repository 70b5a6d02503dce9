"""Tests of the x86-64 encoder and assembler."""
