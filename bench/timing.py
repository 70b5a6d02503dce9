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


def timed_together(torch, fns: dict, reps, rounds: int = 5, warmup=3) -> dict:
    """Median milliseconds per call of each of `fns`, timed in interleaved rounds.

    Each round times one batch of `reps` calls of every function in turn, so a change of
    clock or power state during the measurement (the H200 slows after a large GEMM and
    recovers over seconds) reaches every contender alike instead of whichever ran first.
    `reps` and `warmup` are an int for every function or a dict by name (a slow contender
    gets fewer calls per batch than a fast one).
    """
    reps_of = reps if isinstance(reps, dict) else dict.fromkeys(fns, reps)
    warmup_of = warmup if isinstance(warmup, dict) else dict.fromkeys(fns, warmup)
    for name, fn in fns.items():
        for _ in range(warmup_of[name]):
            fn()
    torch.cuda.synchronize()
    batches = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps_of[name]):
                fn()
            end.record()
            end.synchronize()
            batches[name].append(start.elapsed_time(end) / reps_of[name])
    return {name: statistics.median(b) for name, b in batches.items()}
