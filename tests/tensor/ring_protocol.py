"""What the random-schedule protocol models of the sm_90a rings share
(test_wgmma_ring_model.py, test_wgmma_pingpong_model.py): parity waits answered as
`mbarrier.try_wait.parity` answers them, the ring position's advance, and the ring itself:
the producer filling positions in order, copies landing in any order, wgmma groups that
read a stage until they retire (in order)."""
from __future__ import annotations


def done(phases: int, parity: int) -> bool:
    """try_wait.parity: the phase of that parity has completed (modulo 2 only)."""
    return phases % 2 != parity


def advance(s: int, ph: int, S: int) -> tuple[int, int]:
    s += 1
    return (0, ph ^ 1) if s == S else (s, ph)


class Ring:
    """S stages with their full barriers (completed phases), the chunk each holds and the
    consumers whose unretired groups read it; the producer's count, stage and empty parity
    (1 first: a fresh barrier is free); the copies in flight."""

    def __init__(self, S: int):
        self.S = S
        self.full = [0] * S
        self.loaded = [None] * S
        self.reading = [set() for _ in range(S)]
        self.copies = []
        self.count, self.s, self.ph = 0, 0, 1

    def produce(self) -> str | None:
        """Issue the copy of the next chunk into the producer's stage."""
        if self.reading[self.s]:
            return "refill of a stage being read"
        self.copies.append((self.s, self.count))
        self.count += 1
        self.s, self.ph = advance(self.s, self.ph, self.S)
        return None

    def land(self, rnd) -> None:
        """One copy in flight, chosen at random, lands and completes its full phase."""
        s, chunk = self.copies.pop(rnd.randrange(len(self.copies)))
        self.loaded[s] = chunk
        self.full[s] += 1

    def issue(self, groups: list, who: int, s: int, chunk: int) -> str | None:
        """Consumer `who` issues a group reading stage s, which must hold `chunk`, then
        waits with `wait_group 1` (`groups`: its unretired groups' stages, in order)."""
        if self.loaded[s] != chunk:
            return "wrong chunk"
        self.reading[s].add(who)
        groups.append(s)
        while len(groups) > 1:
            self.retire(groups, who)
        return None

    def retire(self, groups: list, who: int) -> None:
        """The oldest unretired group of `who` retires."""
        self.reading[groups.pop(0)].discard(who)

    def drain(self, groups: list, who: int) -> None:
        """`wait_group 0`."""
        while groups:
            self.retire(groups, who)
