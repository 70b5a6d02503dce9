"""Differential tester for Mettle host programs (and scalar kernels): see README.md."""
