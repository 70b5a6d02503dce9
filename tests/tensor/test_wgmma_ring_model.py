"""A random-schedule model of the sm_90a pipeline's ring protocol (wgmma.py) as the
persistent tile loop runs it: one producer thread and two consumer warpgroups, S stages
with a full and an empty mbarrier each (parity waits exactly as `mbarrier.try_wait.parity`
answers them), copies that land in any order, wgmma groups that retire in order
(`wait_group 1` per stage, `wait_group 0` at a tile's end), and the stage index and phase
parities carried from tile to tile. Checked on every schedule: no deadlock, no refill of
a stage a consumer's group still reads, and every consumer reads the chunk it expects.
The same model with the ring reset per tile must fail (the model can see the bug)."""
from __future__ import annotations

import random

import pytest


def _schedule(S: int, nk: int, tiles: int, seed: int, carry: bool = True) -> str:
    rnd = random.Random(seed)
    full = [0] * S                       # completed phases (a copy landing completes one)
    empty = [[0, 0] for _ in range(S)]   # [completed phases, arrivals in this phase]
    loaded = [None] * S                  # chunk in each stage
    reading = [set() for _ in range(S)]  # consumers whose groups still read the stage
    copies = []
    prod = {"c": 0, "s": 0, "ph": 1}     # empty parity 1: a fresh barrier is free
    cons = [{"s": 0, "ph": 0, "kb": 0, "prev": None, "groups": [], "tile": 0}
            for _ in range(2)]

    def done(phases: int, parity: int) -> bool:   # the phase of that parity completed
        return phases % 2 != parity

    def release(s: int) -> None:
        empty[s][1] += 1
        if empty[s][1] == len(cons):
            empty[s][0] += 1
            empty[s][1] = 0
    for _ in range(200000):
        acts = []
        if prod["c"] < nk * tiles and done(empty[prod["s"]][0], prod["ph"]):
            acts.append(("produce", None))
        if copies:
            acts.append(("land", None))
        for i, c in enumerate(cons):
            if c["tile"] < tiles:
                if c["kb"] < nk and done(full[c["s"]], c["ph"]):
                    acts.append(("mma", i))
                if c["kb"] == nk:
                    acts.append(("end", i))
            if c["groups"]:
                acts.append(("retire", i))
        if not acts:
            finished = prod["c"] == nk * tiles and not copies and \
                all(c["tile"] == tiles for c in cons)
            return "ok" if finished else "deadlock"
        what, i = rnd.choice(acts)
        if what == "produce":
            s = prod["s"]
            if reading[s]:
                return "refill of a stage being read"
            copies.append((s, prod["c"]))
            prod["c"] += 1
            prod["s"], prod["ph"] = _advance(prod["s"], prod["ph"], S)
        elif what == "land":
            s, chunk = copies.pop(rnd.randrange(len(copies)))
            loaded[s] = chunk
            full[s] += 1
        elif what == "retire":
            reading[cons[i]["groups"].pop(0)].discard(i)
        elif what == "mma":
            c, s = cons[i], cons[i]["s"]
            if loaded[s] != c["tile"] * nk + c["kb"]:
                return "wrong chunk"
            reading[s].add(i)
            c["groups"].append(s)
            while len(c["groups"]) > 1:                      # wait_group 1
                reading[c["groups"].pop(0)].discard(i)
            if c["prev"] is not None:
                release(c["prev"])
            c["prev"], c["kb"] = s, c["kb"] + 1
            c["s"], c["ph"] = _advance(c["s"], c["ph"], S)
        else:                                                # a tile's end
            c = cons[i]
            while c["groups"]:                               # wait_group 0
                reading[c["groups"].pop(0)].discard(i)
            if c["prev"] is not None:
                release(c["prev"])
            c["prev"], c["kb"], c["tile"] = None, 0, c["tile"] + 1
            if not carry:
                c["s"], c["ph"] = 0, 0
    return "no progress"


def _advance(s: int, ph: int, S: int) -> tuple[int, int]:
    s += 1
    return (0, ph ^ 1) if s == S else (s, ph)


@pytest.mark.parametrize("S", [2, 3, 4, 6])
def test_ring_carried_across_tiles_is_sound(S):
    for nk in (1, 2, 3, 5, 8):
        for tiles in (1, 2, 3, 5):
            for seed in range(25):
                assert _schedule(S, nk, tiles, seed) == "ok", (S, nk, tiles, seed)


def test_ring_reset_per_tile_is_caught():
    results = {_schedule(4, 3, 3, seed, carry=False) for seed in range(25)}
    assert results - {"ok"}, results
