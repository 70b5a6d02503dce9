"""`mettle.bench(fn)`: time a GPU callable with CUDA events (Triton's do_bench is the model).

Each repetition records an event, calls `fn()`, records another; with `flush_l2=True` a
buffer twice the device's L2 size is cleared before each repetition (outside the timed
span), so every repetition starts with a cold L2 and reads its inputs from memory.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..providers.cuda import driver
from .cuda import CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, Event, device, stream_handle

_FLUSH: dict[int, driver.DeviceBuffer] = {}


@dataclass(frozen=True)
class Timing:
    """Milliseconds per call over `samples` (one per repetition)."""
    samples: tuple[float, ...]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples)

    @property
    def min_ms(self) -> float:
        return min(self.samples)

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.samples)

    def __str__(self) -> str:
        return (f"median {self.median_ms:.4f} ms, min {self.min_ms:.4f} ms over "
                f"{len(self.samples)} runs")


def _flush_buffer(ordinal: int) -> driver.DeviceBuffer:
    buf = _FLUSH.get(ordinal)
    if buf is None:
        dev = device(ordinal)
        l2 = dev.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        buf = _FLUSH[ordinal] = dev.driver.alloc(max(2 * l2, 1 << 20))
    return buf


def bench(fn, *, rep: int = 100, warmup: int = 10, flush_l2: bool = False, stream=None,
          device_ordinal: int = 0) -> Timing:
    """Time `fn()` (which launches work on `stream`, default the legacy default stream)."""
    if rep < 1 or warmup < 0:
        raise ValueError("bench: need rep >= 1 and warmup >= 0")
    dev = device(device_ordinal)
    handle = stream_handle(stream)
    flush = _flush_buffer(device_ordinal) if flush_l2 else None
    for _ in range(warmup):
        fn()
    pairs = []
    for _ in range(rep):
        if flush is not None:
            dev.driver.memset(flush, 0)
        start, end = Event(), Event()
        start.record(handle)
        fn()
        end.record(handle)
        pairs.append((start, end))
    return Timing(tuple(s.elapsed_ms(e) for s, e in pairs))
