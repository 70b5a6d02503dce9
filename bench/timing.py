"""CUDA-event timing shared by the GPU benchmarks (scripts, not tests)."""
from __future__ import annotations

import statistics


def timed(torch, fn, reps: int, warmup: int = 3) -> float:
    """Median milliseconds per call of `fn` over 5 batches of `reps` calls, after warm-up."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    batches = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        batches.append(start.elapsed_time(end) / reps)
    return statistics.median(batches)
