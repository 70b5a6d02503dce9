"""A stand-in for the few torch calls docs/reference/python.md's torch example makes, so the
example runs against the fake CUDA driver where torch (or a GPU) is absent. Tensors are
mettle device arrays (host memory under the fake driver), shaped like CUDA torch tensors as
the runtime reads them: module `torch`, data_ptr(), dtype, device, is_contiguous().
tests/gpu/test_runtime.py runs the same calls on real torch and a real GPU."""
from __future__ import annotations

import numpy as np

import mettle


class dtype:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


float32 = dtype("float32")


class device:
    type, index = "cuda", 0


class Tensor:
    device = device()

    def __init__(self, host: np.ndarray):
        self.array = mettle.to_device(host.astype(np.float32))
        self.dtype = float32

    def data_ptr(self) -> int:
        return self.array.ptr

    def is_contiguous(self) -> bool:
        return True

    def numpy(self) -> np.ndarray:
        return self.array.numpy()

    def __add__(self, other: "Tensor") -> "Tensor":
        return Tensor(self.numpy() + other.numpy())


def rand(n: int, device: str = "cuda") -> Tensor:
    return Tensor(np.random.default_rng(n).random(n, dtype=np.float32))


def empty_like(t: Tensor) -> Tensor:
    return Tensor(np.zeros(t.array.shape, np.float32))


def equal(x: Tensor, y: Tensor) -> bool:
    return bool(np.array_equal(x.numpy(), y.numpy()))


class cuda:
    @staticmethod
    def synchronize() -> None:
        mettle.synchronize()


class _C:
    @staticmethod
    def _cuda_getCurrentRawStream(ordinal: int) -> int:
        return 0
