"""A CUDA-shaped fake driver for tests without a GPU: fake_cuda.c, built by build.py."""
