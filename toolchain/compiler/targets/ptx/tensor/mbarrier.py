"""mbarrier helpers of the sm_90a workgroup GEMM (wgmma.py): shared-memory transaction
barriers, 32-bit shared-window addresses throughout.

A barrier's phase parity starts at 0 and flips each time its expected arrivals (and, for a
full barrier, its expected transaction bytes) complete. `wait(parity)` spins with
`mbarrier.try_wait.parity` until the phase of that parity has completed; waiting on parity
1 of a fresh barrier returns at once, which is how a producer's first pass over an empty
ring proceeds without a separate prologue.
"""
from __future__ import annotations

from .. import ops
from .common import label


def init(em, bar: str, count: int) -> None:
    em.put(ops.mbarrier_init(bar, count))


def wait(em, bar: str, parity: str, cluster: bool = False) -> None:
    """Spin until the phase with `parity` (a u32 register, 0 or 1) of `bar` completed;
    `cluster`: acquire at cluster scope (arrivals come from another workgroup too)."""
    top, done = label(em, "mbw"), em.new("p")
    em.put(ops.label(top), ops.mbarrier_try_wait_parity(done, bar, parity, cluster),
           ops.bra(top, guard=done, negated=True))


def arrive(em, bar: str) -> None:
    em.put(ops.mbarrier_arrive(bar))


def arrive_expect_tx(em, bar: str, nbytes: int) -> None:
    em.put(ops.mbarrier_arrive_expect_tx(bar, nbytes))


def inval(em, bar: str) -> None:
    em.put(ops.mbarrier_inval(bar))
